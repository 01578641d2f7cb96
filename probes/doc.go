// Package probes reads the world: the mount table, filesystem capacity,
// which processes write which files, disk write counters, log tails and
// metrics endpoints. Each probe lives in its own file, takes its roots, URLs
// and clients in its constructor, and takes ctx first; calls that can hang
// (statfs or lstat on a dead NFS server) run where the caller's deadline can
// abandon them. Parsing is split from reading so it can be tested on real
// samples in testdata.
package probes
