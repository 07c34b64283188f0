/*
 * hook.c - every entry point of libstratahook.so: the JVMTI agent
 * (Agent_OnLoad/Agent_OnUnload, for -agentpath:), JNI_OnLoad (System.load
 * from the Java side) and the natives of org.stratatrace.hook.Native.
 * Nothing else is exported (built with -fvisibility=hidden; JNIEXPORT marks
 * these default). The work is in the registry (registry.h).
 *
 * Started as -agentpath:libstratahook.so=jar=strata-hook.jar,..., the library
 * is the hook's only agent: it puts the jar on the system class path, calls
 * org.stratatrace.hook.Agent.boot(options) on a thread it starts at VMInit
 * (boot_thread) and, from its own ClassFileLoadHook, hands Agent.transform
 * the three classes the weaver wants as they load; once it has seen all
 * three it turns the hook off, so the JVM stops posting class loads. A
 * class load costs a name comparison here, where a java.lang.instrument
 * transformer costs a copy of the class file into a Java array and a call
 * up into Java, for each of the thousands of classes a Spark driver loads
 * before its first task (docs/smtt.md).
 * Started as a bare -agentpath: beside -javaagent:strata-hook.jar, the
 * library only sets up the GC events and the Java agent does the rest.
 *
 * The library may be loaded both ways in one JVM; JVMTI is set up once,
 * by whichever comes first. The GC callbacks run inside the GC pause, where
 * no JNI call is allowed, so they only bump counters and wake the hook
 * thread.
 *
 * Whatever keeps the hook off, the JVM runs on unchanged. The library
 * starts on any JVM from Java 8 on (it asks for JVMTI 1.2 and JNI 1.8,
 * which all accept) and stays off on a Java older than the Java side is
 * built for (off.h). Off for that reason, or for wrong options, a jar
 * that does not load, JVMTI unavailable or a Java side that failed to
 * start, it prints "strata-hook: off: WHY" and tells the node agent in an
 * OFF frame (off_report), at JVM start.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <jni.h>
#include <jvmti.h>

#include "off.h"
#include "registry.h"

/* The classes the Java weaver wants (Weaver.java), in internal form. */
static const char *const woven_classes[] = {
	"org/apache/spark/storage/memory/MemoryStore",
	"org/apache/spark/memory/TaskMemoryManager",
	"org/apache/spark/rdd/RDD",
};
#define WOVEN_ALL ((1u << (sizeof(woven_classes) / sizeof(woven_classes[0]))) - 1)

/* The -agentpath form's state: set in Agent_OnLoad and on_vm_init, read by
 * on_class_load on any thread loading a class. */
static struct {
	jvmtiEnv *jvmti;
	char *options;        /* the agent's options, lib=<this library> added */
	jclass agent;         /* global ref: org.stratatrace.hook.Agent */
	jmethodID transform;  /* static byte[] transform(String, byte[]) */
	unsigned seen;        /* bit i: woven_classes[i] has loaded */
} boot;

static int jvmti_ready;

/* Set by Agent_OnLoad, read by report_off() at JVM start: the agent's socket as
 * the options name it ("" for the default) and the JVM's Java feature
 * version (0 unknown). */
static char off_socket[4096];
static uint32_t java_version;

/* The hook stays off: says why on stderr (unless printed already) and to
 * the node agent. */
static void report_off(uint8_t reason, const char *why, int printed)
{
	if (!printed)
		fprintf(stderr, "strata-hook: off: %s\n", why);
	off_report(off_socket, reason, java_version, why);
}

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

static void JNICALL on_vm_init(jvmtiEnv *jvmti, JNIEnv *env, jthread thread);
static void JNICALL on_vm_death(jvmtiEnv *jvmti, JNIEnv *env);
static void utf(JNIEnv *env, jstring s, char *buf, size_t cap);
static void JNICALL on_class_load(jvmtiEnv *jvmti, JNIEnv *env, jclass redefined, jobject loader,
		const char *name, jobject domain, jint len, const unsigned char *data,
		jint *new_len, unsigned char **new_data);

/* Enables the GC events and sets every callback (the -agentpath form's
 * events are enabled by Agent_OnLoad); 0 or a JVMTI/JNI error code. */
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
	cb.VMInit = on_vm_init;
	cb.VMDeath = on_vm_death;
	cb.ClassFileLoadHook = on_class_load;
	if ((err = (*jvmti)->SetEventCallbacks(jvmti, &cb, sizeof(cb))) != JVMTI_ERROR_NONE)
		return (int)err;
	boot.jvmti = jvmti;
	if ((err = (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE,
			JVMTI_EVENT_GARBAGE_COLLECTION_START, NULL)) != JVMTI_ERROR_NONE)
		return (int)err;
	return (int)(*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE,
			JVMTI_EVENT_GARBAGE_COLLECTION_FINISH, NULL);
}

/* Stops posting class loads to on_class_load. */
static void stop_class_hook(void)
{
	(*boot.jvmti)->SetEventNotificationMode(boot.jvmti, JVMTI_DISABLE,
			JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, NULL);
}

/* Prints and clears a pending Java exception, on one line as the Java side
 * prints why it is off, and with a reason reports the hook off (report_off);
 * 1 if there was one. */
static int java_failed(JNIEnv *env, const char *what, uint8_t reason)
{
	char why[512];
	jthrowable e;
	jclass object;
	jmethodID to_string;
	jstring text = NULL;
	const char *chars = NULL;

	if (!(*env)->ExceptionCheck(env))
		return 0;
	e = (*env)->ExceptionOccurred(env);
	(*env)->ExceptionClear(env);
	object = (*env)->FindClass(env, "java/lang/Object");
	to_string = object != NULL ? (*env)->GetMethodID(env, object, "toString", "()Ljava/lang/String;") : NULL;
	if (to_string != NULL)
		text = (jstring)(*env)->CallObjectMethod(env, e, to_string);
	(*env)->ExceptionClear(env);
	if (text != NULL)
		chars = (*env)->GetStringUTFChars(env, text, NULL);
	snprintf(why, sizeof(why), "%s: %s", what, chars != NULL ? chars : "exception");
	if (chars != NULL)
		(*env)->ReleaseStringUTFChars(env, text, chars);
	if (reason != 0)
		report_off(reason, why, 0);
	else
		fprintf(stderr, "strata-hook: off: %s\n", why);
	return 1;
}

/* After Agent.boot returned reason: its offDetail, the line it printed,
 * goes to the agent. */
static void boot_off(JNIEnv *env, jclass agent, jint reason)
{
	char why[STRATA_STR_MAX + 1];
	jfieldID field;
	jstring detail = NULL;

	field = (*env)->GetStaticFieldID(env, agent, "offDetail", "Ljava/lang/String;");
	if (field != NULL)
		detail = (jstring)(*env)->GetStaticObjectField(env, agent, field);
	(*env)->ExceptionClear(env);
	utf(env, detail, why, sizeof(why));
	if (reason <= 0 || reason > STRATA_OFF_REASON_MAX)
		reason = STRATA_OFF_JAVA_START;
	report_off((uint8_t)reason, why[0] != '\0' ? why : "the Java side did not start", 1);
}

/*
 * The Java side boots on a thread of its own (boot_thread), not in VMInit
 * on the JVM's main thread: loading the jar's classes, calibrating object
 * addresses and starting the native side then overlap the main thread's
 * own class loading instead of delaying main(). A class the weaver wants can
 * only load later (Spark defines it once its SparkContext starts, seconds
 * on); should one load while the boot still runs, on_class_load waits for
 * it (boot_wait), at most BOOT_WAIT_S, and otherwise lets it load unwoven.
 */
#define BOOT_WAIT_S 30
enum { BOOT_NONE, BOOT_RUNNING, BOOT_FINISHED };
static pthread_mutex_t boot_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t boot_cv = PTHREAD_COND_INITIALIZER;
static int boot_state;              /* under boot_mu */
static __thread int on_boot_thread; /* this thread runs the boot: never wait for it */

static void boot_set(int state)
{
	pthread_mutex_lock(&boot_mu);
	boot_state = state;
	pthread_cond_broadcast(&boot_cv);
	pthread_mutex_unlock(&boot_mu);
}

/* Waits for a boot under way to finish, at most BOOT_WAIT_S; 1 if one
 * has finished. */
static int boot_wait(void)
{
	struct timespec until;
	int done;

	if (on_boot_thread)
		return 0;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += BOOT_WAIT_S;
	pthread_mutex_lock(&boot_mu);
	while (boot_state == BOOT_RUNNING && pthread_cond_timedwait(&boot_cv, &boot_mu, &until) != ETIMEDOUT)
		;
	done = boot_state == BOOT_FINISHED;
	pthread_mutex_unlock(&boot_mu);
	return done;
}

/* The Java side is loaded through the system class loader (where
 * Agent_OnLoad put the jar) and started with the agent's options. */
static void boot_java(JNIEnv *env)
{
	jclass loader_class, agent;
	jmethodID system_loader, load_class, boot_method;
	jobject loader;
	jstring name, options;
	jint reason;

	loader_class = (*env)->FindClass(env, "java/lang/ClassLoader");
	if (java_failed(env, "find ClassLoader", STRATA_OFF_JAVA_START) || loader_class == NULL)
		goto off;
	system_loader = (*env)->GetStaticMethodID(env, loader_class, "getSystemClassLoader",
			"()Ljava/lang/ClassLoader;");
	load_class = (*env)->GetMethodID(env, loader_class, "loadClass", "(Ljava/lang/String;)Ljava/lang/Class;");
	if (java_failed(env, "find ClassLoader's methods", STRATA_OFF_JAVA_START) || system_loader == NULL ||
			load_class == NULL)
		goto off;
	loader = (*env)->CallStaticObjectMethod(env, loader_class, system_loader);
	name = (*env)->NewStringUTF(env, "org.stratatrace.hook.Agent");
	if (java_failed(env, "get the system class loader", STRATA_OFF_JAVA_START) || loader == NULL ||
			name == NULL)
		goto off;
	agent = (jclass)(*env)->CallObjectMethod(env, loader, load_class, name);
	if (java_failed(env, "load org.stratatrace.hook.Agent from the jar", STRATA_OFF_JAR) || agent == NULL)
		goto off;
	boot_method = (*env)->GetStaticMethodID(env, agent, "boot", "(Ljava/lang/String;)I");
	boot.transform = (*env)->GetStaticMethodID(env, agent, "transform", "(Ljava/lang/String;[B)[B");
	if (java_failed(env, "find Agent.boot and Agent.transform", STRATA_OFF_JAR) || boot_method == NULL ||
			boot.transform == NULL)
		goto off;
	options = (*env)->NewStringUTF(env, boot.options);
	if (java_failed(env, "copy the options", STRATA_OFF_JAVA_START) || options == NULL)
		goto off;
	reason = (*env)->CallStaticIntMethod(env, agent, boot_method, options);
	if (java_failed(env, "Agent.boot", STRATA_OFF_JAVA_START))
		goto off;
	if (reason != 0) {
		boot_off(env, agent, reason); /* Agent.boot printed why */
		goto off;
	}
	agent = (*env)->NewGlobalRef(env, agent);
	if (agent != NULL) {
		__atomic_store_n(&boot.agent, agent, __ATOMIC_RELEASE);
		return;
	}
off:
	stop_class_hook();
}

static void JNICALL boot_thread(jvmtiEnv *jvmti, JNIEnv *env, void *arg)
{
	(void)jvmti;
	(void)arg;
	on_boot_thread = 1;
	boot_java(env);
	boot_set(BOOT_FINISHED);
}

/* Starts boot_thread as a JVMTI agent thread (a daemon); 0 on success. */
static int start_boot_thread(jvmtiEnv *jvmti, JNIEnv *env)
{
	jclass thread_class;
	jmethodID init;
	jstring name;
	jobject t;

	thread_class = (*env)->FindClass(env, "java/lang/Thread");
	init = thread_class != NULL ? (*env)->GetMethodID(env, thread_class, "<init>", "(Ljava/lang/String;)V") : NULL;
	name = init != NULL ? (*env)->NewStringUTF(env, "strata-hook-boot") : NULL;
	t = name != NULL ? (*env)->NewObject(env, thread_class, init, name) : NULL;
	if ((*env)->ExceptionCheck(env) || t == NULL) {
		(*env)->ExceptionClear(env);
		return -1;
	}
	return (*jvmti)->RunAgentThread(jvmti, t, boot_thread, NULL, JVMTI_THREAD_NORM_PRIORITY) ==
			JVMTI_ERROR_NONE ? 0 : -1;
}

/* VMInit: the boot starts on its own thread, or here when no thread can
 * be made. */
static void JNICALL on_vm_init(jvmtiEnv *jvmti, JNIEnv *env, jthread thread)
{
	(void)thread;
	if (boot.options == NULL)
		return; /* a bare -agentpath: the Java agent starts itself */
	boot_set(BOOT_RUNNING);
	if (start_boot_thread(jvmti, env) == 0)
		return;
	boot_thread(jvmti, env, NULL);
	on_boot_thread = 0;
}

/* VMDeath: a JVM that ends while the boot still runs (java -version) waits
 * for it, so that it still says whether the hook was on and, if not, why. */
static void JNICALL on_vm_death(jvmtiEnv *jvmti, JNIEnv *env)
{
	(void)jvmti;
	(void)env;
	boot_wait();
}

/* ClassFileLoadHook: hands the woven classes to Agent.transform; any other
 * class costs one prefix comparison. */
static void JNICALL on_class_load(jvmtiEnv *jvmti, JNIEnv *env, jclass redefined, jobject loader,
		const char *name, jobject domain, jint len, const unsigned char *data,
		jint *new_len, unsigned char **new_data)
{
	static const char prefix[] = "org/apache/spark/";
	jclass agent;
	jstring jname;
	jbyteArray in, out;
	unsigned char *buf;
	jsize n;
	unsigned i, bit;

	(void)redefined;
	(void)loader;
	(void)domain;
	if (name == NULL || strncmp(name, prefix, sizeof(prefix) - 1) != 0)
		return;
	for (i = 0; i < sizeof(woven_classes) / sizeof(woven_classes[0]); i++)
		if (strcmp(name, woven_classes[i]) == 0)
			break;
	if (i == sizeof(woven_classes) / sizeof(woven_classes[0]))
		return;
	if ((agent = __atomic_load_n(&boot.agent, __ATOMIC_ACQUIRE)) == NULL &&
			(!boot_wait() || (agent = __atomic_load_n(&boot.agent, __ATOMIC_ACQUIRE)) == NULL))
		return;
	bit = 1u << i;
	if ((__atomic_or_fetch(&boot.seen, bit, __ATOMIC_ACQ_REL) & WOVEN_ALL) == WOVEN_ALL)
		stop_class_hook(); /* from the next class defined on */
	jname = (*env)->NewStringUTF(env, name);
	in = jname != NULL ? (*env)->NewByteArray(env, len) : NULL;
	/* Checked first: a failed allocation leaves an exception pending, which
	 * must not reach the class being defined. */
	if (java_failed(env, "copy a class file", 0) || in == NULL)
		return;
	(*env)->SetByteArrayRegion(env, in, 0, len, (const jbyte *)data);
	out = (jbyteArray)(*env)->CallStaticObjectMethod(env, agent, boot.transform, jname, in);
	if (java_failed(env, "Agent.transform", 0) || out == NULL)
		return;
	n = (*env)->GetArrayLength(env, out);
	if ((*jvmti)->Allocate(jvmti, n, &buf) != JVMTI_ERROR_NONE)
		return;
	(*env)->GetByteArrayRegion(env, out, 0, n, (jbyte *)buf);
	*new_len = n;
	*new_data = buf;
}

/* The value of key in comma-separated key=value options, up to the next
 * comma or the end; NULL when the key is absent. */
static const char *option_value(const char *options, const char *key)
{
	size_t k = strlen(key);

	for (const char *o = options; o != NULL; o = strchr(o, ',')) {
		if (*o == ',')
			o++;
		if (strncmp(o, key, k) == 0 && o[k] == '=')
			return o + k + 1;
	}
	return NULL;
}

/* The -agentpath form: the jar on the system class path, the options kept
 * for Agent.boot with this library's own path added (the Java side must load
 * this very file: a second copy would have its own state); 0, or an error
 * message and its OFF reason. */
static const char *setup_boot(const char *options, uint8_t *reason)
{
	static const char lib_key[] = ",lib=";
	const char *jar, *end;
	char path[4096];
	Dl_info self;
	size_t n;

	*reason = STRATA_OFF_JVMTI;
	if (boot.jvmti == NULL)
		return "JVMTI unavailable";
	*reason = STRATA_OFF_OPTIONS;
	if ((jar = option_value(options, "jar")) == NULL)
		return "no jar= in the agent's options";
	end = strchr(jar, ',');
	n = end != NULL ? (size_t)(end - jar) : strlen(jar);
	if (n == 0 || n >= sizeof(path))
		return "bad jar= in the agent's options";
	memcpy(path, jar, n);
	path[n] = '\0';
	*reason = STRATA_OFF_JAR;
	if ((*boot.jvmti)->AddToSystemClassLoaderSearch(boot.jvmti, path) != JVMTI_ERROR_NONE)
		return "cannot add the jar to the class path";
	*reason = STRATA_OFF_JAVA_START;
	if (dladdr((void *)setup_boot, &self) == 0 || self.dli_fname == NULL)
		return "cannot find this library's path";
	n = strlen(options) + sizeof(lib_key) + strlen(self.dli_fname);
	if ((boot.options = malloc(n)) == NULL)
		return "out of memory";
	*reason = STRATA_OFF_JVMTI;
	if (option_value(options, "lib") != NULL)
		snprintf(boot.options, n, "%s", options);
	else
		snprintf(boot.options, n, "%s%s%s", options, lib_key, self.dli_fname);
	if ((*boot.jvmti)->SetEventNotificationMode(boot.jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_INIT,
			NULL) != JVMTI_ERROR_NONE ||
			(*boot.jvmti)->SetEventNotificationMode(boot.jvmti, JVMTI_ENABLE,
					JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, NULL) != JVMTI_ERROR_NONE) {
		free(boot.options);
		boot.options = NULL;
		return "cannot enable VMInit and ClassFileLoadHook";
	}
	/* Without VMDeath a JVM that ends during the boot just says less. */
	(*boot.jvmti)->SetEventNotificationMode(boot.jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_DEATH, NULL);
	return NULL;
}

static int setup_error;

/* Copies the JVM's java.vm.specification.version (set before agents load:
 * "1.8", "11", "21") into buf, read through a JVMTI environment of its own;
 * "" unknown. */
static void java_spec(JavaVM *vm, char *buf, size_t cap)
{
	jvmtiEnv *jvmti;
	char *v = NULL;

	buf[0] = '\0';
	if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK)
		return;
	if ((*jvmti)->GetSystemProperty(jvmti, "java.vm.specification.version", &v) == JVMTI_ERROR_NONE &&
			v != NULL) {
		snprintf(buf, cap, "%s", v);
		(*jvmti)->Deallocate(jvmti, (unsigned char *)v);
	}
	(*jvmti)->DisposeEnvironment(jvmti);
}

/* Copies the options' socket= into off_socket ("" when absent). */
static void keep_socket(const char *options)
{
	const char *v = options != NULL ? option_value(options, "socket") : NULL;
	size_t n = 0;

	if (v != NULL) {
		n = strcspn(v, ",");
		if (n >= sizeof(off_socket))
			n = 0; /* too long for a socket anyway: the default */
		memcpy(off_socket, v, n);
	}
	off_socket[n] = '\0';
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved)
{
	const char *why;
	char spec[32], failed[64];
	uint8_t reason = STRATA_OFF_OPTIONS;

	(void)reserved;
	keep_socket(options);
	java_spec(vm, spec, sizeof(spec));
	if (off_java_check(spec, off_socket, &java_version))
		return JNI_OK; /* never stop the JVM */
	setup_error = setup_jvmti(vm);
	if (setup_error != 0) {
		snprintf(failed, sizeof(failed), "JVMTI set-up failed (error %d)", setup_error);
		report_off(STRATA_OFF_JVMTI, failed, 0);
		return JNI_OK;
	}
	if (options != NULL && options[0] != '\0' && (why = setup_boot(options, &reason)) != NULL)
		report_off(reason, why, 0);
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
 *                         int longBase, int refSize, int walkMode) */
JNIEXPORT jint JNICALL Java_org_stratatrace_hook_Native_start(JNIEnv *env, jclass cls,
		jstring socket, jint reconnect_ms, jint byte_base, jint long_base, jint ref_size,
		jint walk_mode)
{
	struct reg_config c;
	JavaVM *vm;

	memset(&c, 0, sizeof(c));
	utf(env, socket, c.socket_path, sizeof(c.socket_path));
	c.reconnect_ms = reconnect_ms;
	c.byte_array_base = (uint16_t)byte_base;
	c.long_array_base = (uint16_t)long_base;
	c.ref_size = (uint16_t)ref_size;
	if (walk_mode < 0 || walk_mode > STRATA_WALK_MODE_MAX)
		return -EINVAL;
	c.walk_mode = (uint8_t)walk_mode;
	c.object_class = (*env)->NewGlobalRef(env, cls);
	c.object_address = (*env)->GetStaticMethodID(env, cls, "objectAddress", "(Ljava/lang/Object;)J");
	c.walk_wake = (*env)->GetStaticMethodID(env, cls, "walkWake", "()V");
	c.column_buffers = (*env)->GetStaticMethodID(env, cls, "columnBuffers", "([Ljava/lang/Object;I[J)[J");
	if (c.object_class == NULL || c.object_address == NULL || c.walk_wake == NULL || c.column_buffers == NULL ||
			(*env)->GetJavaVM(env, &vm) != 0)
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
 *     long taskAttempt, int column, long sparkBytes, String name,
 *     String label): for REG_CACHED_COLUMN, ref is the block's Object[] of
 *     batches and the registry finds the range (offset and length unused) */
JNIEXPORT jlong JNICALL Java_org_stratatrace_hook_Native_register(JNIEnv *env, jclass cls,
		jint source, jobject ref, jlong off, jlong length, jint rdd, jint partition,
		jint mode, jint location, jint kind, jint flags, jint chunk, jint chunks,
		jint stage, jint stage_attempt, jlong task_attempt, jint column, jlong spark_bytes,
		jstring name, jstring label)
{
	char nm[STRATA_STR_MAX + 1], lb[STRATA_STR_MAX + 1];
	struct reg_block b;

	(void)cls;
	if (source < REG_HEAP_ARRAY || source > REG_CACHED_COLUMN || (length <= 0 && source != REG_CACHED_COLUMN) ||
			(source == REG_CACHED_COLUMN && (ref == NULL || (flags & STRATA_BLOCK_CACHED_BATCH) == 0)))
		return 0;
	utf(env, name, nm, sizeof(nm));
	utf(env, label, lb, sizeof(lb));
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
		.column = column,
		.spark_bytes = spark_bytes > 0 ? (uint64_t)spark_bytes : 0,
		.name = nm,
		.label = lb,
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

/* static native void walkMode(int mode): HELLO's walk mode, decided */
JNIEXPORT void JNICALL Java_org_stratatrace_hook_Native_walkMode(JNIEnv *env, jclass cls, jint mode)
{
	(void)env;
	(void)cls;
	if (mode >= STRATA_WALK_ON && mode <= STRATA_WALK_MODE_MAX)
		reg_set_walk_mode((uint8_t)mode);
}

/* static native int lowerPriority(int nice): the calling thread's nice value
 * raised to nice (Linux keeps it per thread); 0 or a negative errno */
JNIEXPORT jint JNICALL Java_org_stratatrace_hook_Native_lowerPriority(JNIEnv *env, jclass cls, jint nice)
{
	id_t tid = (id_t)syscall(SYS_gettid);
	int now;

	(void)env;
	(void)cls;
	errno = 0;
	now = getpriority(PRIO_PROCESS, tid);
	if (now == -1 && errno != 0)
		return -errno;
	if (now >= nice)
		return 0;
	return setpriority(PRIO_PROCESS, tid, nice) == 0 ? 0 : -errno;
}

/* static native int gcEpoch(): GCs finished */
JNIEXPORT jint JNICALL Java_org_stratatrace_hook_Native_gcEpoch(JNIEnv *env, jclass cls)
{
	(void)env;
	(void)cls;
	return (jint)reg_gc_epoch();
}

/* static native int rescannedEpoch(): the GC epoch of the latest rescan */
JNIEXPORT jint JNICALL Java_org_stratatrace_hook_Native_rescannedEpoch(JNIEnv *env, jclass cls)
{
	(void)env;
	(void)cls;
	return (jint)reg_rescanned_epoch();
}

/* static native long objectSize(Object o): JVMTI GetObjectSize, 0 on error */
JNIEXPORT jlong JNICALL Java_org_stratatrace_hook_Native_objectSize(JNIEnv *env, jclass cls, jobject o)
{
	jlong size = 0;

	(void)env;
	(void)cls;
	if (o == NULL || boot.jvmti == NULL ||
			(*boot.jvmti)->GetObjectSize(boot.jvmti, o, &size) != JVMTI_ERROR_NONE)
		return 0;
	return size;
}

/* static native int walk(long id, int gcEpoch, int state, long objects,
 *     long bytes, long sharedObjects, long sharedBytes, long opaqueObjects,
 *     long[] extents, int n): extents holds n {vaddr, length} pairs,
 *     ascending and disjoint. Returns the walk's seq, 0 when not sent (the
 *     block is gone, the extents are malformed, memory ran out). */
JNIEXPORT jint JNICALL Java_org_stratatrace_hook_Native_walk(JNIEnv *env, jclass cls, jlong id,
		jint gc_epoch, jint state, jlong objects, jlong bytes, jlong shared_objects,
		jlong shared_bytes, jlong opaque_objects, jlongArray extents, jint n)
{
	struct reg_walk *w;
	uint64_t end = 0;

	(void)cls;
	if (id == 0 || state < STRATA_WALK_DONE || state > STRATA_WALK_STATE_MAX || n < 0 ||
			(n > 0 && (extents == NULL || (*env)->GetArrayLength(env, extents) < 2 * (jsize)n)) ||
			(state == STRATA_WALK_STALE && n != 0) || (uint32_t)n / STRATA_WALK_EXTENTS_MAX >= 65535)
		return 0;
	w = calloc(1, sizeof(*w));
	if (w == NULL)
		return 0;
	if (n > 0 && (w->ext = malloc((size_t)n * sizeof(*w->ext))) == NULL) {
		free(w);
		return 0;
	}
	/* Copied before the registry's lock is taken (a JNI call). */
	if (n > 0)
		(*env)->GetLongArrayRegion(env, extents, 0, 2 * n, (jlong *)w->ext);
	for (jint i = 0; i < n; i++) {
		const struct strata_extent *x = &w->ext[i];

		if (x->length == 0 || x->vaddr + x->length < x->vaddr || (i > 0 && x->vaddr < end)) {
			free(w->ext);
			free(w);
			return 0;
		}
		end = x->vaddr + x->length;
	}
	w->gc_epoch = (uint32_t)gc_epoch;
	w->state = (uint8_t)state;
	w->objects = (uint64_t)objects;
	w->bytes = (uint64_t)bytes;
	w->shared_objects = (uint64_t)shared_objects;
	w->shared_bytes = (uint64_t)shared_bytes;
	w->opaque_objects = (uint64_t)opaque_objects;
	w->n = (uint32_t)n;
	return (jint)reg_walk((uint64_t)id, w);
}

/* static native void checked(int gcEpoch) */
JNIEXPORT void JNICALL Java_org_stratatrace_hook_Native_checked(JNIEnv *env, jclass cls, jint gc_epoch)
{
	(void)env;
	(void)cls;
	reg_checked((uint32_t)gc_epoch);
}

/*
 * The fill marks: the hook calls fillBegin(key) as a MemoryStore put begins
 * and fillEnd(stored) as it ends, on the putting thread. The node agent's
 * uprobes on these two functions are the marks (agent/tracer reads key and
 * stored as the third argument, after env and cls): they make the kernel
 * count the thread's page faults for the block until the put ends. The
 * bodies only count the calls (the exit line's fills=), which also keeps
 * the two functions apart: a compiler may fold identical functions into
 * one address, where both probes would fire on every call. Each begins
 * with a nop, the instruction the uprobe replaces and then steps: a uprobe
 * refuses to step a lock-prefixed instruction (the atomic add), and a JVM
 * that maps the library later would get no probe, silently.
 */
static uint64_t fills_begun, fills_stored;

/* static native void fillBegin(long key) */
JNIEXPORT void JNICALL Java_org_stratatrace_hook_Native_fillBegin(JNIEnv *env, jclass cls, jlong key)
{
	__asm__ volatile("nop" ::: "memory");
	(void)env;
	(void)cls;
	(void)key;
	__atomic_fetch_add(&fills_begun, 1, __ATOMIC_RELAXED);
}

/* static native void fillEnd(int stored) */
JNIEXPORT void JNICALL Java_org_stratatrace_hook_Native_fillEnd(JNIEnv *env, jclass cls, jint stored)
{
	__asm__ volatile("nop" ::: "memory");
	(void)env;
	(void)cls;
	if (stored)
		__atomic_fetch_add(&fills_stored, 1, __ATOMIC_RELAXED);
}

/* static native long[] stats(): sent, dropped, live, gcEpoch, connects,
 * moves, collected, fills begun, fills stored */
JNIEXPORT jlongArray JNICALL Java_org_stratatrace_hook_Native_stats(JNIEnv *env, jclass cls)
{
	struct reg_stats s;
	jlong v[9];
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
	v[7] = (jlong)__atomic_load_n(&fills_begun, __ATOMIC_RELAXED);
	v[8] = (jlong)__atomic_load_n(&fills_stored, __ATOMIC_RELAXED);
	a = (*env)->NewLongArray(env, 9);
	if (a != NULL)
		(*env)->SetLongArrayRegion(env, a, 0, 9, v);
	return a;
}

/* static native void report(): DROPPED now */
JNIEXPORT void JNICALL Java_org_stratatrace_hook_Native_report(JNIEnv *env, jclass cls)
{
	(void)env;
	(void)cls;
	reg_report();
}
