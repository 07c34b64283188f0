/*
 * off.c - the Java version check and the OFF report (off.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frame.h"
#include "off.h"

int off_java_feature(const char *v)
{
	char *end;
	long major;

	if (v == NULL)
		return 0;
	if (strncmp(v, "1.", 2) == 0)
		v += 2; /* Java 8 and older say 1.8 */
	if (*v < '1' || *v > '9')
		return 0;
	errno = 0;
	major = strtol(v, &end, 10);
	if (errno != 0 || (*end != '\0' && *end != '.') || major > 9999)
		return 0;
	return (int)major;
}

int off_java_refused(int java, char *buf, size_t cap)
{
	if (java == 0 || java >= OFF_JAVA_MIN)
		return 0;
	snprintf(buf, cap, "Java %d is not supported (needs %d or later)", java, OFF_JAVA_MIN);
	return 1;
}

int off_java_check(const char *spec, const char *path, uint32_t *java)
{
	char why[128];
	int f = off_java_feature(spec);

	*java = (uint32_t)f;
	if (!off_java_refused(f, why, sizeof(why)))
		return 0;
	fprintf(stderr, "strata-hook: off: %s\n", why);
	off_report(path, STRATA_OFF_JAVA_VERSION, (uint32_t)f, why);
	return 1;
}

int off_report(const char *path, uint8_t reason, uint32_t java, const char *detail)
{
	char d[STRATA_STR_MAX + 1];
	struct strata_conn c;
	size_t n;
	int rc;

	n = detail != NULL ? strnlen(detail, sizeof(d)) : 0;
	if (n > STRATA_STR_MAX) {
		n = STRATA_STR_MAX;
		while (n > 0 && ((unsigned char)detail[n] & 0xc0) == 0x80)
			n--; /* cut before a UTF-8 continuation byte, at a character's start */
	}
	if (n > 0)
		memcpy(d, detail, n);
	d[n] = '\0';
	rc = strata_conn_try(&c, path != NULL && path[0] != '\0' ? path : NULL);
	if (rc != 0)
		return rc;
	rc = strata_send_off(&c, &(struct strata_off_args){
					 .pid = (uint32_t)getpid(),
					 .reason = reason,
					 .java = java,
					 .detail = d,
				 });
	strata_conn_close(&c);
	return rc;
}
