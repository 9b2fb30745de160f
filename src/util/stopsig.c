/* The stop signals' handler (stopsig.h). */
#include "stopsig.h"

#include <pthread.h>
#include <signal.h>
#include <stddef.h>

static pthread_t main_thread;
static void (*stop_fn)(void);

static void on_stop(int sig)
{
	stop_fn();
	if (!pthread_equal(pthread_self(), main_thread))
		pthread_kill(main_thread, sig);
}

void stopsig_install(void (*stop)(void))
{
	static const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
	struct sigaction sa = {.sa_handler = on_stop}, was;

	main_thread = pthread_self();
	stop_fn = stop;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (sigaction(sigs[i], NULL, &was) == 0 && was.sa_handler != SIG_IGN)
			sigaction(sigs[i], &sa, NULL);
}
