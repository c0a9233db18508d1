/*
 * Hardware profiles: the built-in ones, and files of `key value` lines
 * that start from one of them (tracegen(1), HARDWARE PROFILES).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tg.h"

static const struct tg_hw builtin[] = {
	{ "h100", "NVIDIA H100 80GB HBM3", "sm90", 132, 9, 0, 80, 989, 3350,
	    4.5, 2.5, 1.5, 360, 1.0, 45, 4.5, 1.0 },
	{ "h200", "NVIDIA H200", "sm90", 132, 9, 0, 141, 989, 4800,
	    4.5, 2.5, 1.5, 360, 1.0, 45, 4.5, 1.0 },
	{ "a100", "NVIDIA A100-SXM4-80GB", "sm80", 108, 8, 0, 80, 312, 2039,
	    5.5, 3.0, 2.5, 230, 1.3, 22, 5.5, 1.15 },
};

const char hw_names[] = "h100, h200, a100";

int
hw_builtin(const char *name, struct tg_hw *hw)
{
	size_t i;

	for (i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
		if (strcmp(builtin[i].name, name) == 0) {
			*hw = builtin[i];
			return 0;
		}
	return -1;
}

/* A number for key k: finite, > 0 (>= 0 where zero is allowed), at most max. */
static int
num(const char *v, double zero_ok, double max, double *out)
{
	char *end;
	double d;

	if (*v == '\0')
		return -1;
	errno = 0;
	d = strtod(v, &end);
	if (errno != 0 || *end != '\0' || !isfinite(d) || d < 0 ||
	    (d == 0 && !zero_ok) || d > max)
		return -1;
	*out = d;
	return 0;
}

static void
copy_text(char *dst, size_t size, const char *v)
{
	snprintf(dst, size, "%s", v);
}

int
hw_load(const char *path, struct tg_hw *hw, char *err, size_t errlen)
{
	FILE *fp = fopen(path, "r");
	char line[512];
	int lineno = 0, keys = 0, rc = -1;

	if (fp == NULL) {
		snprintf(err, errlen, "%s", strerror(errno));
		return -1;
	}
	hw_builtin("h100", hw);
	copy_text(hw->name, sizeof(hw->name), "file");
	while (fgets(line, sizeof(line), fp) != NULL) {
		char *k, *v, *e;
		double d;

		lineno++;
		if (strchr(line, '\n') == NULL && !feof(fp)) {
			snprintf(err, errlen, "line %d: longer than 510 bytes", lineno);
			goto out;
		}
		line[strcspn(line, "\r\n")] = '\0';
		for (k = line; *k == ' ' || *k == '\t'; k++)
			;
		if (*k == '\0' || *k == '#')
			continue;
		for (v = k; *v != '\0' && *v != ' ' && *v != '\t'; v++)
			;
		if (*v != '\0')
			*v++ = '\0';
		while (*v == ' ' || *v == '\t')
			v++;
		for (e = v + strlen(v); e > v && (e[-1] == ' ' || e[-1] == '\t'); e--)
			;
		*e = '\0';
		if (*v == '\0') {
			snprintf(err, errlen, "line %d: %s has no value", lineno, k);
			goto out;
		}
		if (strcmp(k, "base") == 0) {
			if (keys > 0) {
				snprintf(err, errlen, "line %d: base must come before other keys", lineno);
				goto out;
			}
			if (hw_builtin(v, hw) < 0) {
				snprintf(err, errlen, "line %d: unknown base profile '%.40s' (%s)",
				    lineno, v, hw_names);
				goto out;
			}
			copy_text(hw->name, sizeof(hw->name), "file");
		} else if (strcmp(k, "name") == 0) {
			copy_text(hw->name, sizeof(hw->name), v);
		} else if (strcmp(k, "gpu") == 0) {
			copy_text(hw->gpu, sizeof(hw->gpu), v);
		} else if (strcmp(k, "arch") == 0) {
			if (strcmp(v, "sm80") != 0 && strcmp(v, "sm90") != 0) {
				snprintf(err, errlen, "line %d: arch is sm80 or sm90, not '%.20s'", lineno, v);
				goto out;
			}
			copy_text(hw->arch, sizeof(hw->arch), v);
		} else if (strcmp(k, "cc") == 0) {
			int ma, mi;
			char c;

			if (sscanf(v, "%d.%d%c", &ma, &mi, &c) != 2 || ma < 1 || ma > 99 ||
			    mi < 0 || mi > 9) {
				snprintf(err, errlen, "line %d: cc is MAJOR.MINOR, not '%.20s'", lineno, v);
				goto out;
			}
			hw->cc_major = ma, hw->cc_minor = mi;
		} else if (strcmp(k, "sms") == 0) {
			if (num(v, 0, 100000, &d) < 0 || d != floor(d))
				goto bad;
			hw->sms = (int)d;
		} else {
			static const struct {
				const char *key;
				size_t off;
				double max;
				int zero_ok;
			} keytab[] = {
				{ "mem_gib", offsetof(struct tg_hw, mem_gib), 1e6, 0 },
				{ "tflops", offsetof(struct tg_hw, tflops), 1e6, 0 },
				{ "mem_gbps", offsetof(struct tg_hw, mem_gbps), 1e6, 0 },
				{ "launch_us", offsetof(struct tg_hw, launch_us), 1e4, 0 },
				{ "gpu_latency_us", offsetof(struct tg_hw, gpu_lat_us), 1e4, 1 },
				{ "event_us", offsetof(struct tg_hw, event_us), 1e4, 1 },
				{ "nvlink_gbps", offsetof(struct tg_hw, nvlink_gbps), 1e6, 0 },
				{ "nvlink_us", offsetof(struct tg_hw, nvlink_us), 1e4, 1 },
				{ "net_gbps", offsetof(struct tg_hw, net_gbps), 1e6, 0 },
				{ "net_us", offsetof(struct tg_hw, net_us), 1e4, 1 },
				{ "host_scale", offsetof(struct tg_hw, host_scale), 100, 0 },
			};
			size_t i;

			for (i = 0; i < sizeof(keytab) / sizeof(keytab[0]); i++)
				if (strcmp(k, keytab[i].key) == 0)
					break;
			if (i == sizeof(keytab) / sizeof(keytab[0])) {
				snprintf(err, errlen, "line %d: unknown key '%.40s'", lineno, k);
				goto out;
			}
			if (num(v, keytab[i].zero_ok, keytab[i].max, &d) < 0)
				goto bad;
			*(double *)((char *)hw + keytab[i].off) = d;
		}
		keys++;
		continue;
bad:
		snprintf(err, errlen, "line %d: bad value for %s: '%.40s'", lineno, k, v);
		goto out;
	}
	if (ferror(fp)) {
		snprintf(err, errlen, "read error: %s", strerror(errno ? errno : EIO));
		goto out;
	}
	rc = 0;
out:
	fclose(fp);
	return rc;
}
