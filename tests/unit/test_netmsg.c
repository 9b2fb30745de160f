/* Unit tests: the daemon <-> sbxfs-netproxy messages (src/util/netmsg.c), abuse first: the
 * daemon reads what a proxy that parses the sandbox's bytes sends, so packets of the wrong size
 * or type are refused (their descriptors closed), and a record's strings must be terminated
 * and printable before they reach the log. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "netmsg.h"

static int pair[2];

static void test_round_trip(void)
{
	struct netmsg m = {.type = NETMSG_LISTEN, .id = 7}, got;
	int fd = open("/dev/null", O_RDONLY), rfd;

	CHECK(netmsg_send(pair[0], &m, fd, true) == 0);
	CHECK(netmsg_recv(pair[1], &got, &rfd) == 1);
	CHECK(got.type == NETMSG_LISTEN && got.id == 7 && rfd >= 0 && rfd != fd);
	close(rfd);
	close(fd);
	CHECK(netmsg_recv(pair[1], &got, &rfd) == -EAGAIN && rfd == -1);
}

static void test_bad_packets(void)
{
	struct netmsg m = {.type = 99}, got;
	char small[8] = {1};
	int rfd;

	CHECK(netmsg_send(pair[0], &m, -1, true) == 0);
	CHECK(netmsg_recv(pair[1], &got, &rfd) == -EBADMSG && rfd == -1);
	CHECK(send(pair[0], small, sizeof(small), 0) == sizeof(small));
	CHECK(netmsg_recv(pair[1], &got, &rfd) == -EBADMSG);
	m.type = 0;
	CHECK(netmsg_send(pair[0], &m, open("/dev/null", O_RDONLY), true) == 0);
	CHECK(netmsg_recv(pair[1], &got, &rfd) == -EBADMSG && rfd == -1);
}

static void test_records(void)
{
	struct netmsg_conn c;

	memset(&c, 0, sizeof(c));
	strcpy(c.host, "a.example");
	strcpy(c.addr, "198.51.100.10");
	strcpy(c.rule, "allow *.example private");
	CHECK(netmsg_conn_ok(&c));
	/* a host is what the sandbox sent: any byte but NUL, escaped when it is logged */
	c.host[3] = '\n';
	CHECK(netmsg_conn_ok(&c));
	c.host[3] = (char)0xc3;
	CHECK(netmsg_conn_ok(&c));
	c.host[3] = 'x';
	memset(c.rule, 'r', sizeof(c.rule)); /* no terminator */
	CHECK(!netmsg_conn_ok(&c));
}

int main(void)
{
	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pair) == 0);
	test_round_trip();
	test_bad_packets();
	test_records();
	return check_done();
}
