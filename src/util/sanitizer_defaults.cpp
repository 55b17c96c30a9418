// Default options of the sanitizer runtimes, compiled into every program of a
// CIFAR_SANITIZE build (the cpu-debug preset) by cifar_link_core. Built in,
// they hold however a program starts — from ctest, as one of mpirun's ranks,
// from a shell — with no environment to pass through mpirun; ASAN_OPTIONS,
// UBSAN_OPTIONS and LSAN_OPTIONS set at run time still override them.
// docs/fuzzing.md explains each choice.

#define CIFAR_SANITIZER_HOOK extern "C" __attribute__((visibility("default"), used)) const char*

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
CIFAR_SANITIZER_HOOK __lsan_default_suppressions() {
  return "leak:libtorch_cpu.so\n";
}
