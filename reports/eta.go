package reports

import (
	"strings"
	"time"
)

// ETASections are the lines an ETA answer and an ETA warning share: a lead (the warning's reason,
// or why no ETA is known; "" for none), the ETA, the progress and the throughput, in one section.
func ETASections(rs RunStatus, loc *time.Location, lead string) []string {
	var lines []string
	if lead != "" {
		lines = append(lines, lead)
	}
	if rs.ETA != nil {
		lines = append(lines, ETALine(*rs.ETA, loc))
	}
	if rs.Progress != nil {
		lines = append(lines, ProgressLine(*rs.Progress))
	}
	if rs.Throughput != nil {
		lines = append(lines, ThroughputBeside(*rs.Throughput, rs.Finish))
	}
	return []string{strings.Join(lines, "\n")}
}
