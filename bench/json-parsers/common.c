#include "common.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

FILE *jb_open(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
    return f;
}

int jb_close(FILE *f, const char *path)
{
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "%s: read error\n", path);
        return -1;
    }
    return 0;
}

char *jb_read_file(const char *path, size_t *len)
{
    struct stat st;
    FILE *f = jb_open(path);
    char *buf = NULL;
    size_t cap, n = 0;

    if (f == NULL)
        return NULL;
    if (fstat(fileno(f), &st) != 0) {
        fprintf(stderr, "%s: fstat: %s\n", path, strerror(errno));
        fclose(f);
        return NULL;
    }
    /* Size hint from fstat; the loop below copes with files that differ. */
    cap = (st.st_size > 0 ? (size_t)st.st_size : 0) + 1;
    buf = malloc(cap + 1);
    if (buf == NULL) {
        fprintf(stderr, "%s: out of memory (%zu bytes)\n", path, cap + 1);
        fclose(f);
        return NULL;
    }
    for (;;) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) {
            if (ferror(f))
                goto fail;
            break; /* EOF */
        }
        /* Buffer full: file larger than fstat said; grow. */
        {
            size_t ncap = cap * 2;
            char *nb = realloc(buf, ncap + 1);
            if (nb == NULL) {
                fprintf(stderr, "%s: out of memory\n", path);
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
            cap = ncap;
        }
    }
    if (jb_close(f, path) != 0) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
fail:
    fprintf(stderr, "%s: read error: %s\n", path, strerror(errno));
    free(buf);
    fclose(f);
    return NULL;
}

long long jb_dur_from_double(double d)
{
    if (!(d == d))
        return 0; /* NaN cannot come from JSON, but be safe */
    if (d >= 9.2e18)
        return LLONG_MAX;
    if (d <= -9.2e18)
        return LLONG_MIN;
    return (long long)d;
}

int jb_dur_from_text(const char *s, size_t n, long long *out)
{
    char tmp[64];
    char *end;
    long long v;

    if (n == 0 || n >= sizeof tmp)
        return -1;
    if (!(s[0] == '-' || (s[0] >= '0' && s[0] <= '9')))
        return -1;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    errno = 0;
    v = strtoll(tmp, &end, 10);
    if (*end == '\0' && errno == 0) {
        *out = v;
        return 0;
    }
    {
        double d = strtod(tmp, &end);
        if (*end != '\0')
            return -1;
        *out = jb_dur_from_double(d);
    }
    return 0;
}

int jb_only_ws(const char *s, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
            return 0;
    return 1;
}

int jb_print_result(unsigned long long events, long long dursum)
{
    printf("events=%llu dursum=%lld\n", events, dursum);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "stdout: write error\n");
        return 1;
    }
    return 0;
}
