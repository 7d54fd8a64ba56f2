// LD_PRELOAD shim: DynamoDB Local has no bind-address option and listens on every
// interface. This rewrites a bind() to the IPv4 wildcard into 127.0.0.1, and one to the
// IPv6 wildcard into ::ffff:127.0.0.1, so a dual-stack socket (Java's default) still
// takes IPv4 loopback connections, which is what its clients use.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);

int bind(int fd, const struct sockaddr *addr, socklen_t len) {
    static bind_fn real_bind;
    if (!real_bind) real_bind = (bind_fn)dlsym(RTLD_NEXT, "bind");
    if (addr && addr->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        struct sockaddr_in in4;
        memcpy(&in4, addr, sizeof in4);
        if (in4.sin_addr.s_addr == htonl(INADDR_ANY)) {
            in4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            return real_bind(fd, (const struct sockaddr *)&in4, sizeof in4);
        }
    }
    if (addr && addr->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 in6;
        memcpy(&in6, addr, sizeof in6);
        if (memcmp(&in6.sin6_addr, &in6addr_any, sizeof in6addr_any) == 0) {
            static const unsigned char mapped_loopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
            memcpy(&in6.sin6_addr, mapped_loopback, sizeof mapped_loopback);
            return real_bind(fd, (const struct sockaddr *)&in6, sizeof in6);
        }
    }
    return real_bind(fd, addr, len);
}
