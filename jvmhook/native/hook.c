/*
 * hook.c - every entry point of libstratahook.so: the JVMTI agent
 * (Agent_OnLoad/Agent_OnUnload, for -agentpath:), JNI_OnLoad (System.load
 * from the Java agent) and the natives of org.stratatrace.hook.Native.
 * Nothing else is exported (built with -fvisibility=hidden; JNIEXPORT marks
 * these default). The work is in registry.c.
 *
 * The library may be loaded both ways in one JVM; JVMTI is set up once,
 * by whichever comes first. Only GarbageCollectionStart/Finish are enabled:
 * their callbacks run inside the GC pause, where no JNI call is allowed, so
 * they only bump counters and wake the hook thread.
 */
#include <errno.h>
#include <string.h>

#include <jni.h>
#include <jvmti.h>

#include "registry.h"

static int jvmti_ready;

static void JNICALL on_gc_start(jvmtiEnv *jvmti)
{
	(void)jvmti;
	reg_gc_start();
}

static void JNICALL on_gc_finish(jvmtiEnv *jvmti)
{
	(void)jvmti;
	reg_gc_finish();
}

/* Enables the GC events; 0 or a JVMTI/JNI error code. */
static int setup_jvmti(JavaVM *vm)
{
	jvmtiEnv *jvmti;
	jvmtiCapabilities caps;
	jvmtiEventCallbacks cb;
	jvmtiError err;

	if (__atomic_exchange_n(&jvmti_ready, 1, __ATOMIC_ACQ_REL))
		return 0;
	if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK)
		return -1;
	memset(&caps, 0, sizeof(caps));
	caps.can_generate_garbage_collection_events = 1;
	if ((err = (*jvmti)->AddCapabilities(jvmti, &caps)) != JVMTI_ERROR_NONE)
		return (int)err;
	memset(&cb, 0, sizeof(cb));
	cb.GarbageCollectionStart = on_gc_start;
	cb.GarbageCollectionFinish = on_gc_finish;
	if ((err = (*jvmti)->SetEventCallbacks(jvmti, &cb, sizeof(cb))) != JVMTI_ERROR_NONE)
		return (int)err;
	if ((err = (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE,
			JVMTI_EVENT_GARBAGE_COLLECTION_START, NULL)) != JVMTI_ERROR_NONE)
		return (int)err;
	return (int)(*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE,
			JVMTI_EVENT_GARBAGE_COLLECTION_FINISH, NULL);
}

static int setup_error;

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved)
{
	(void)options;
	(void)reserved;
	setup_error = setup_jvmti(vm);
	return JNI_OK; /* never stop the JVM: without events the hook reports less */
}

JNIEXPORT void JNICALL Agent_OnUnload(JavaVM *vm)
{
	(void)vm;
	reg_report();
}

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved)
{
	(void)reserved;
	if (setup_error == 0)
		setup_error = setup_jvmti(vm);
	return JNI_VERSION_1_8;
}

/* Copies a Java string into buf as (modified) UTF-8; "" for null. A string
 * too long for buf is cut to whole characters that surely fit. */
static void utf(JNIEnv *env, jstring s, char *buf, size_t cap)
{
	jsize len;

	memset(buf, 0, cap);
	if (s == NULL)
		return;
	len = (*env)->GetStringLength(env, s);
	if ((size_t)(*env)->GetStringUTFLength(env, s) >= cap)
		len = (jsize)((cap - 1) / 3); /* <= 3 bytes per UTF-16 unit */
	(*env)->GetStringUTFRegion(env, s, 0, len, buf);
	buf[cap - 1] = '\0';
}

/* static native int start(String socket, int reconnectMs, int byteBase,
 *                         int longBase, int refSize) */
JNIEXPORT jint JNICALL Java_org_stratatrace_hook_Native_start(JNIEnv *env, jclass cls,
		jstring socket, jint reconnect_ms, jint byte_base, jint long_base, jint ref_size)
{
	struct reg_config c;
	JavaVM *vm;

	memset(&c, 0, sizeof(c));
	utf(env, socket, c.socket_path, sizeof(c.socket_path));
	c.reconnect_ms = reconnect_ms;
	c.byte_array_base = (uint16_t)byte_base;
	c.long_array_base = (uint16_t)long_base;
	c.ref_size = (uint16_t)ref_size;
	c.object_class = (*env)->NewGlobalRef(env, cls);
	c.object_address = (*env)->GetStaticMethodID(env, cls, "objectAddress", "(Ljava/lang/Object;)J");
	if (c.object_class == NULL || c.object_address == NULL || (*env)->GetJavaVM(env, &vm) != 0)
		return -EINVAL;
	if (setup_error != 0)
		return -ENOTSUP;
	return reg_start(env, vm, &c);
}

/* static native void identify(String appId, String executorId) */
JNIEXPORT void JNICALL Java_org_stratatrace_hook_Native_identify(JNIEnv *env, jclass cls,
		jstring app, jstring exec)
{
	char a[STRATA_STR_MAX + 1], e[STRATA_STR_MAX + 1];

	(void)cls;
	utf(env, app, a, sizeof(a));
	utf(env, exec, e, sizeof(e));
	reg_identify(a, e);
}

/* static native long register(int source, Object ref, long offsetOrAddress,
 *     long length, int rdd, int partition, int mode, int location, int kind,
 *     int flags, int chunk, int chunks, int stage, int stageAttempt,
 *     long taskAttempt, String name) */
JNIEXPORT jlong JNICALL Java_org_stratatrace_hook_Native_register(JNIEnv *env, jclass cls,
		jint source, jobject ref, jlong off, jlong length, jint rdd, jint partition,
		jint mode, jint location, jint kind, jint flags, jint chunk, jint chunks,
		jint stage, jint stage_attempt, jlong task_attempt, jstring name)
{
	char nm[STRATA_STR_MAX + 1];
	struct reg_block b;

	(void)cls;
	if (length <= 0 || source < REG_HEAP_ARRAY || source > REG_ADDRESS)
		return 0;
	utf(env, name, nm, sizeof(nm));
	memset(&b, 0, sizeof(b));
	b.source = (enum reg_source)source;
	b.ref = ref;
	if (source == REG_ADDRESS)
		b.address = (uint64_t)off;
	else
		b.offset = (uint64_t)off;
	b.args = (struct strata_block_args){
		.length = (uint64_t)length,
		.rdd_id = rdd,
		.partition = partition,
		.mode = (uint8_t)mode,
		.location = (uint8_t)location,
		.kind = (uint8_t)kind,
		.flags = (uint8_t)flags,
		.chunk = (uint32_t)chunk,
		.chunks = (uint32_t)chunks,
		.stage_id = stage,
		.stage_attempt = stage_attempt,
		.task_attempt_id = task_attempt,
		.name = nm,
	};
	return (jlong)reg_add(env, &b);
}

/* static native void free(long id, int reason) */
JNIEXPORT void JNICALL Java_org_stratatrace_hook_Native_free(JNIEnv *env, jclass cls, jlong id,
		jint reason)
{
	(void)env;
	(void)cls;
	reg_free((uint64_t)id, (uint8_t)reason);
}

/* static native void access(long id, long offset, long length, int kind) */
JNIEXPORT void JNICALL Java_org_stratatrace_hook_Native_access(JNIEnv *env, jclass cls, jlong id,
		jlong offset, jlong length, jint kind)
{
	(void)env;
	(void)cls;
	reg_access((uint64_t)id, (uint64_t)offset, (uint64_t)length, (uint8_t)kind);
}

/* static native long address(long id): a live block's current first byte */
JNIEXPORT jlong JNICALL Java_org_stratatrace_hook_Native_address(JNIEnv *env, jclass cls, jlong id)
{
	(void)env;
	(void)cls;
	return (jlong)reg_vaddr((uint64_t)id);
}

/* static native long arrayAddress(Object primitiveArray): data start now */
JNIEXPORT jlong JNICALL Java_org_stratatrace_hook_Native_arrayAddress(JNIEnv *env, jclass cls,
		jobject arr)
{
	void *p;

	(void)cls;
	if (arr == NULL)
		return 0;
	p = (*env)->GetPrimitiveArrayCritical(env, arr, NULL);
	if (p == NULL)
		return 0;
	(*env)->ReleasePrimitiveArrayCritical(env, arr, p, JNI_ABORT);
	return (jlong)(uintptr_t)p;
}

/* static native long[] stats(): sent, dropped, live, gcEpoch, connects,
 * moves, collected */
JNIEXPORT jlongArray JNICALL Java_org_stratatrace_hook_Native_stats(JNIEnv *env, jclass cls)
{
	struct reg_stats s;
	jlong v[7];
	jlongArray a;

	(void)cls;
	reg_stats(&s);
	v[0] = (jlong)s.sent;
	v[1] = (jlong)s.dropped;
	v[2] = (jlong)s.live;
	v[3] = (jlong)s.gc_epoch;
	v[4] = (jlong)s.connects;
	v[5] = (jlong)s.moves;
	v[6] = (jlong)s.collected;
	a = (*env)->NewLongArray(env, 7);
	if (a != NULL)
		(*env)->SetLongArrayRegion(env, a, 0, 7, v);
	return a;
}

/* static native void report(): DROPPED now */
JNIEXPORT void JNICALL Java_org_stratatrace_hook_Native_report(JNIEnv *env, jclass cls)
{
	(void)env;
	(void)cls;
	reg_report();
}
