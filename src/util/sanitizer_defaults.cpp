// Default options of the sanitizer runtimes, compiled into every program of a
// CIFAR_SANITIZE build (the cpu-debug preset) by cifar_link_core. Built in,
// they hold however a program starts — from ctest, as one of mpirun's ranks,
// from a shell — with no environment to pass through mpirun; ASAN_OPTIONS,
// UBSAN_OPTIONS and LSAN_OPTIONS set at run time still override them.
// docs/dev/fuzzing.md explains each choice.

#define CIFAR_SANITIZER_HOOK extern "C" __attribute__((visibility("default"), used)) const char*

// The sanitizer runtimes look these reserved names up.
// NOLINTBEGIN(bugprone-reserved-identifier)

// AddressSanitizer: also report uncaught exceptions' aborts with a stack, and
// globals used before their initialisation (across translation units).
CIFAR_SANITIZER_HOOK __asan_default_options() {
  return "handle_abort=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1";
}

// UBSan: a stack for every report; the build's -fno-sanitize-recover makes each one fatal.
CIFAR_SANITIZER_HOOK __ubsan_default_options() { return "print_stacktrace=1:halt_on_error=1"; }

// LeakSanitizer: leaks inside third-party code that this project cannot fix.
// Each line names the library whose frame allocated the memory.
//   libtorch_cpu.so: LibTorch 1.13's zip reader (PyTorchStreamReader::init)
//     leaks miniz's reader state when the zip is damaged and its constructor
//     throws (about 3 KB per refused file; the checkpoint fuzz harness). Debian
//     builds LibTorch without frame pointers, so a leak allocated in its code
//     shows one frame of it and no caller; our own leaks, and tensors (which
//     libc10 allocates), are still reported.
//   Open MPI 4.1 and its PMIx, hwloc and libevent: MPI_Init allocates tables
//     that MPI_Finalize does not free (every MPI program leaks some KB at exit,
//     whatever it does). Their components (mca_*.so) are found by path; their
//     asprintf'd strings show libc's vasprintf and no caller (glibc has no
//     frame pointers either). This project's code calls no asprintf.
CIFAR_SANITIZER_HOOK __lsan_default_suppressions() {
  return "leak:libtorch_cpu.so\n"
         "leak:libmpi.so\n"
         "leak:libopen-pal.so\n"
         "leak:libopen-rte.so\n"
         "leak:libpmix.so\n"
         "leak:libhwloc.so\n"
         "leak:libevent\n"
         "leak:/openmpi/lib/\n"
         "leak:/pmix2/lib/\n"
         "leak:__vasprintf_internal\n";
}

// NOLINTEND(bugprone-reserved-identifier)

// Open MPI and PMIx load their components with dlopen and unload them in
// MPI_Finalize, before LeakSanitizer looks at the heap at exit: a leak
// allocated in an unloaded component shows "<unknown module>", which no
// suppression can name (and fast unwinding stops there: Debian builds Open MPI
// without frame pointers). In sanitizer builds nothing is unloaded, so each
// such leak names its component. This definition replaces the sanitizer
// runtime's weak dlclose interceptor; unloading is only ever an optimisation.
extern "C" __attribute__((visibility("default"), used)) int dlclose(void* /*handle*/) { return 0; }
