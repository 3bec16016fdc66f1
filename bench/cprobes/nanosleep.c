/* What one 20 us sleep costs, as Go's sysmon takes it (usleep(20)) while
 * a process is busy: CPU time per nanosleep, and the wall time it really
 * lasts (timer slack). docs/benchmarks.md, "Seventh session".
 *
 *   cc -O2 -o /tmp/nanosleep bench/cprobes/nanosleep.c && /tmp/nanosleep
 */
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

enum { N = 20000 };

static double usec(struct timeval tv) { return tv.tv_sec * 1e6 + tv.tv_usec; }

int main(void) {
	struct timespec ts = {0, 20000}, t0, t1;
	struct rusage a, b;
	getrusage(RUSAGE_SELF, &a);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < N; i++)
		nanosleep(&ts, 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	getrusage(RUSAGE_SELF, &b);
	double cpu = usec(b.ru_utime) - usec(a.ru_utime) + usec(b.ru_stime) - usec(a.ru_stime);
	double wall = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e3;
	printf("per 20 us nanosleep: wall %.1f us, cpu %.2f us\n", wall / N, cpu / N);
	return 0;
}
