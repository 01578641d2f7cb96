package reports

import "strings"

// problemKinds are the kinds of probe a Problem can name, longest first where one begins another:
// the words a probe's name starts with, before the URL, address, path or run it is about.
var problemKinds = []string{
	"prometheus exporter host", "prometheus target", "prometheus storage", "prometheus writers", "prometheus",
	"metrics", "log", "path", "statfs", "written", "state", "storage", "progress", "mounts", "writers",
	"disk activity", "monitor",
}

// Kind is what kind of probe failed, without what it was about ("prometheus target" for
// "prometheus target gpu-node-3:8000", "statfs" for "statfs /data"): a value from a short fixed
// list, "other" for a name outside it, for labels that must stay few (the bot's own metrics). The
// full name goes to the log and the answers.
func (p Problem) Kind() string {
	for _, k := range problemKinds {
		if p.Probe == k || strings.HasPrefix(p.Probe, k+" ") {
			return k
		}
	}
	return "other"
}
