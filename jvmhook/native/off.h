/*
 * off.h - a hook that stays off in its JVM: the Java versions it runs on,
 * and the OFF frame (strata_hook.h) that tells the node agent why, so that
 * an operator sees an unhooked JVM in the agent's metrics and log, not
 * only in the executor's stderr.
 */
#ifndef STRATA_OFF_H
#define STRATA_OFF_H

#include <stddef.h>
#include <stdint.h>

/* The oldest Java the hook runs on: its Java side is built for it
 * (--release 11). */
#define OFF_JAVA_MIN 11

/* The Java feature version a java.vm.specification.version names ("1.8"
 * is 8, "11" is 11); 0 when v is NULL or not a version. */
int off_java_feature(const char *v);

/* 1, with why in buf, when the hook cannot run on Java feature version
 * java ("Java 8 is not supported (needs 11 or later)"); 0 when it can or
 * the version is unknown (0). */
int off_java_refused(int java, char *buf, size_t cap);

/* The hook's Java check at JVM start, for the JVM whose
 * java.vm.specification.version is spec (NULL unknown): sets *java to its
 * feature version and, on a Java the hook does not run on, prints
 * "strata-hook: off: WHY" on stderr, reports it (off_report, reason
 * STRATA_OFF_JAVA_VERSION) to the agent's socket at path and returns 1;
 * else 0. */
int off_java_check(const char *spec, const char *path, uint32_t *java);

/* Sends OFF (reason, the JVM's Java feature version java, detail cut to
 * STRATA_STR_MAX bytes at a character's start) on a connection of its own
 * to the agent's socket at path (NULL or "": $STRATA_HOOK_SOCKET, else
 * the default), and closes it. Never waits: no agent, a full backlog or a
 * full socket drop the report. 0 when sent, else a negative errno. The
 * caller prints the stderr line. */
int off_report(const char *path, uint8_t reason, uint32_t java, const char *detail);

#endif /* STRATA_OFF_H */
