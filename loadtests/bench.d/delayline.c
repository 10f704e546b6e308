/*
 * nb-delayline: a wire with a fixed one-way delay between network namespaces, for
 * loadtests/bench --netns on kernels without netem (CONFIG_NET_SCH_NETEM unset).
 *
 * It owns one TUN device, "nb-tun", in each namespace it is given, and forwards every
 * IPv4 packet read from one of them to the namespace that holds the packet's destination
 * address, `delay` microseconds later. TCP runs end to end between the namespaces' own
 * stacks; only the wire is here. It does not own addresses and routes (the benchmark
 * sets them once the devices exist) and never touches the namespace it was started in.
 *
 *   nb-delayline DELAY_US NS=ADDR[,ADDR...] NS=ADDR[,ADDR...] ...
 *
 * It prints "ready" once every device exists and runs until SIGTERM or SIGINT; the
 * devices disappear with it (they are not persistent).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define MAX_NS 8
#define MAX_ADDRS 8
#define SLOTS 8192      /* packets waiting per destination: 5 ms at 1.6 M packets/s */
#define SLOT_BYTES 2048 /* above the devices' MTU of 1500 */

typedef struct {
    uint64_t due_ns;
    uint16_t len;
    unsigned char data[SLOT_BYTES];
} packet_t;

/* One namespace: its device and the packets waiting to be written into it (a FIFO:
 * every packet gets the same delay, so they fall due in the order they came). */
typedef struct {
    const char *name;
    int fd;
    uint32_t addrs[MAX_ADDRS]; /* network order */
    int n_addrs;
    packet_t *queue;
    unsigned head, count;
    unsigned long long forwarded, dropped;
} ns_t;

static ns_t spaces[MAX_NS];
static int n_spaces;
static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
    fprintf(stderr, "nb-delayline: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* Opens a TUN device named nb-tun inside namespace `name` (the device belongs to the
 * namespace the opener is in at TUNSETIFF), then returns to our own namespace. */
static int open_tun_in(const char *name, int home)
{
    char path[256];
    snprintf(path, sizeof(path), "/run/netns/%s", name);
    int nsfd = open(path, O_RDONLY | O_CLOEXEC);
    if (nsfd < 0)
        die(path);
    if (setns(nsfd, CLONE_NEWNET) != 0)
        die("setns");
    close(nsfd);
    int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        die("/dev/net/tun");
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
    strncpy(ifr.ifr_name, "nb-tun", IFNAMSIZ - 1);
    if (ioctl(fd, TUNSETIFF, &ifr) != 0)
        die("TUNSETIFF");
    if (setns(home, CLONE_NEWNET) != 0)
        die("setns back");
    return fd;
}

static ns_t *owner_of(uint32_t addr)
{
    for (int i = 0; i < n_spaces; i++)
        for (int j = 0; j < spaces[i].n_addrs; j++)
            if (spaces[i].addrs[j] == addr)
                return &spaces[i];
    return NULL;
}

static void parse_space(ns_t *ns, char *arg)
{
    char *eq = strchr(arg, '=');
    if (eq == NULL) {
        fprintf(stderr, "nb-delayline: '%s' is not NS=ADDR[,ADDR...]\n", arg);
        exit(2);
    }
    *eq = '\0';
    ns->name = arg;
    for (char *a = strtok(eq + 1, ","); a != NULL; a = strtok(NULL, ",")) {
        if (ns->n_addrs == MAX_ADDRS || inet_pton(AF_INET, a, &ns->addrs[ns->n_addrs]) != 1) {
            fprintf(stderr, "nb-delayline: bad address '%s'\n", a);
            exit(2);
        }
        ns->n_addrs++;
    }
    ns->queue = calloc(SLOTS, sizeof(packet_t));
    if (ns->queue == NULL)
        die("calloc");
}

/* Reads every packet waiting on `from` and queues each for the namespace that owns its
 * destination; packets for nobody we know, or for the sender itself, are dropped. */
static void read_packets(ns_t *from, uint64_t delay_ns)
{
    unsigned char buf[SLOT_BYTES];
    for (;;) {
        ssize_t n = read(from->fd, buf, sizeof(buf));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return; /* EAGAIN: drained */
        }
        if (n < 20 || (buf[0] >> 4) != 4)
            continue; /* not IPv4: the benchmark uses none */
        uint32_t dst;
        memcpy(&dst, buf + 16, sizeof(dst));
        ns_t *to = owner_of(dst);
        if (to == NULL || to == from || to->count == SLOTS) {
            from->dropped++;
            continue;
        }
        packet_t *p = &to->queue[(to->head + to->count) % SLOTS];
        p->due_ns = now_ns() + delay_ns;
        p->len = (uint16_t)n;
        memcpy(p->data, buf, (size_t)n);
        to->count++;
    }
}

/* Writes the packets that are due; returns the earliest due time left, or 0. */
static uint64_t write_due(void)
{
    uint64_t now = now_ns(), next = 0;
    for (int i = 0; i < n_spaces; i++) {
        ns_t *ns = &spaces[i];
        while (ns->count > 0) {
            packet_t *p = &ns->queue[ns->head];
            if (p->due_ns > now) {
                if (next == 0 || p->due_ns < next)
                    next = p->due_ns;
                break;
            }
            if (write(ns->fd, p->data, p->len) == p->len)
                ns->forwarded++;
            else
                ns->dropped++;
            ns->head = (ns->head + 1) % SLOTS;
            ns->count--;
        }
    }
    return next;
}

static void arm(int tfd, uint64_t due_ns)
{
    struct itimerspec its;
    memset(&its, 0, sizeof(its));
    if (due_ns != 0) {
        its.it_value.tv_sec = (time_t)(due_ns / 1000000000u);
        its.it_value.tv_nsec = (long)(due_ns % 1000000000u);
    }
    if (timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL) != 0)
        die("timerfd_settime");
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc - 2 > MAX_NS) {
        fprintf(stderr, "usage: nb-delayline DELAY_US NS=ADDR[,ADDR...] ...\n");
        return 2;
    }
    uint64_t delay_ns = strtoull(argv[1], NULL, 10) * 1000u;
    int home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (home < 0)
        die("/proc/self/ns/net");
    int ep = epoll_create1(EPOLL_CLOEXEC);
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (ep < 0 || tfd < 0)
        die("epoll/timerfd");
    for (int i = 2; i < argc; i++) {
        ns_t *ns = &spaces[n_spaces++];
        parse_space(ns, argv[i]);
        ns->fd = open_tun_in(ns->name, home);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = ns};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, ns->fd, &ev) != 0)
            die("epoll_ctl");
    }
    struct epoll_event tev = {.events = EPOLLIN, .data.ptr = NULL};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &tev) != 0)
        die("epoll_ctl");
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    printf("ready\n");
    fflush(stdout);

    uint64_t armed = 0;
    while (!stopping) {
        struct epoll_event evs[MAX_NS + 1];
        int n = epoll_wait(ep, evs, MAX_NS + 1, -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            die("epoll_wait");
        }
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == NULL) {
                uint64_t expirations;
                if (read(tfd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
                    die("timerfd read");
                armed = 0;
            } else {
                read_packets(evs[i].data.ptr, delay_ns);
            }
        }
        uint64_t next = write_due();
        if (next != armed) {
            arm(tfd, next);
            armed = next;
        }
    }
    for (int i = 0; i < n_spaces; i++)
        fprintf(stderr, "nb-delayline: %s: %llu packets delivered, %llu dropped\n", spaces[i].name,
                spaces[i].forwarded, spaces[i].dropped);
    return 0;
}
