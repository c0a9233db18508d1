/*
 * merge: graph-deps --merge, one job graph from one section per rank.
 * See merge.c and graph-deps(1).
 */
#ifndef KG_MERGE_H
#define KG_MERGE_H

/*
 * Read every section of paths[0..n) (NULL or "-": stdin), merge them
 * into one job section on output (NULL: stdout). verbose: a line per
 * rank on stderr. Returns the exit status.
 */
int merge_run(char **paths, int n, const char *output, int verbose);

#endif
