/*
 * opmodel's calls (struct calls, om.h): the measured operator calls the
 * inputs give, and the GPU they were measured on.
 *
 * Promises: each call owns copies of its strings; every input names the
 * same GPU (--gpu and --sms over what the inputs say), or set_gpu says
 * which two differ. Leaves to input.c and stream.c the reading.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "om.h"
#include "util.h"

void
calls_init(struct calls *cs)
{
	memset(cs, 0, sizeof(*cs));
}

void
calls_release(struct calls *cs)
{
	size_t i;

	for (i = 0; i < cs->n; i++) {
		free(cs->c[i].kernel);
		free(cs->c[i].op);
		free(cs->c[i].dims);
	}
	free(cs->c);
	memset(cs, 0, sizeof(*cs));
}

void
add_call(struct calls *cs, const struct om_desc *d, double us, int src, const char *kernel,
    const char *op, const char *dims)
{
	struct mcall c;

	c.d = *d;
	c.us = us;
	c.src = src;
	c.kernel = xstrndup(kernel, strlen(kernel));
	c.op = xstrndup(op, strlen(op));
	c.dims = dims != NULL ? xstrndup(dims, strlen(dims)) : NULL;
	VEC_PUSH(cs->c, cs->n, cs->cap, c);
}

int
set_gpu(struct calls *cs, const char *path, const char *gpu, int sms, const struct read_opts *o)
{
	if (o->gpu != NULL)
		gpu = o->gpu;
	if (o->sms > 0)
		sms = o->sms;
	if (gpu == NULL || *gpu == '\0')
		return 0;
	if (cs->gpu[0] == '\0') {
		snprintf(cs->gpu, sizeof(cs->gpu), "%s", gpu);
		cs->gpu_file = path;
	} else if (!om_same_gpu(cs->gpu, gpu)) {
		errmsg("%s: a trace of %s, but %s is of %s: one model per GPU (--gpu to override)",
		    path, gpu, cs->gpu_file, cs->gpu);
		return 1;
	}
	if (cs->sms == 0 && sms > 0)
		cs->sms = sms;
	return 0;
}
