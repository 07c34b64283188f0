/*
 * offcheck.c - test helper for test/spark, built by the Go tests with gcc
 * together with jvmhook/native/off.c and frame.c: the library's Java check
 * at JVM start (off_java_check, the very function Agent_OnLoad calls with
 * the JVM's java.vm.specification.version), on versions no JVM here has.
 *
 *   offcheck SOCKET SPEC...   for each SPEC, as the library in a JVM whose
 *                             java.vm.specification.version it is: print
 *                               SPEC <feature version> <1 off, 0 on>
 *                             (the off ones print their stderr line and
 *                             report OFF to the agent's socket SOCKET)
 */
#include <stdio.h>
#include <string.h>

#include "off.h"

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s SOCKET SPEC...\n", argv[0]);
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		uint32_t java = 0;
		int off = off_java_check(argv[i], argv[1], &java);

		printf("%s %u %d\n", argv[i], java, off);
	}
	return 0;
}
