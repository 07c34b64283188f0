//go:build cgo

// Package fillmark defines, in C, the two functions the tracer's fill
// probes attach to, under the JVM hook's JNI names and with its argument
// order, so that the tracer's tests mark fills from a process of their
// own (the test binary, which holds them) without a JVM.
package fillmark

/*
#include <stdint.h>

// The bodies of the hook's (jvmhook/native/hook.c), instruction for
// instruction in kind: a nop for the uprobe to replace, then an atomic
// count; distinct, so that no compiler folds the two into one address.
static uint64_t begun, stored;

void Java_org_stratatrace_hook_Native_fillBegin(void *env, void *cls, int64_t key)
{
	__asm__ volatile("nop" ::: "memory");
	(void)env;
	(void)cls;
	(void)key;
	__atomic_fetch_add(&begun, 1, __ATOMIC_RELAXED);
}

void Java_org_stratatrace_hook_Native_fillEnd(void *env, void *cls, int32_t ok)
{
	__asm__ volatile("nop" ::: "memory");
	(void)env;
	(void)cls;
	if (ok)
		__atomic_fetch_add(&stored, 1, __ATOMIC_RELAXED);
}
*/
import "C"

import "unsafe"

// Available says the functions exist (the package was built with cgo).
const Available = true

// Begin calls fillBegin(key) on the calling thread.
func Begin(key uint64) {
	C.Java_org_stratatrace_hook_Native_fillBegin(nil, nil, C.int64_t(key))
}

// End calls fillEnd(stored) on the calling thread.
func End(stored bool) {
	s := C.int32_t(0)
	if stored {
		s = 1
	}
	C.Java_org_stratatrace_hook_Native_fillEnd(nil, nil, s)
}

// Addresses are the two functions' addresses in this process.
func Addresses() (begin, end uintptr) {
	return uintptr(unsafe.Pointer(C.Java_org_stratatrace_hook_Native_fillBegin)),
		uintptr(unsafe.Pointer(C.Java_org_stratatrace_hook_Native_fillEnd))
}
