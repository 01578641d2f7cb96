package reports

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"runwatch/probes"
)

// coverageInput is a run with /shared protected and an output on /data; this machine's scan sees the
// job writing to /data only, and every process.
func coverageInput() StorageInput {
	return StorageInput{
		Table: table,
		Paths: []PathObservation{
			{Path: "/data/synth/out", Role: RoleOutput, Resolved: "/data/synth/out", Exists: true, Mount: mData, HasMount: true, Usage: usage(2.8e12, 7.68e12)},
			{Path: "/shared", Role: RoleProtected, Resolved: "/shared", Exists: true, Mount: mShared, HasMount: true, Usage: usage(50e12, 100e12)},
		},
		Scan: &probes.WriterScan{Processes: 300, Writers: []probes.Writer{
			{PID: 4242, Command: "python3", File: "/data/synth/out/part-0001.jsonl", MountID: 30, Flags: 0o100001},
		}},
	}
}

// hostNames are n hosts, gpu-1 to gpu-n.
func hostNames(n int) []string {
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, fmt.Sprintf("gpu-%d", i))
	}
	return out
}

// firstLines are the verdicts of the writes, safe and status answers, as the console shows them.
func firstLines(st Storage) (writes, safe, status string) {
	line := func(m Message) string {
		lines := strings.Split(m.Text(), "\n")
		return lines[1]
	}
	return line(AnswerWrites("synth", st, Target{})), line(AnswerSafe("synth", st, Target{})), PlainText(StorageVerdict(st, nil))
}

// TestVerdictsSayWhatTheyCouldNotSee: "(ok) No", "(ok) Yes" and "(ok) no writes" only when what answered
// covers the question; a silent source leads the verdict, in the writes answer, "is it safe?" and the
// status alike, and a warning about what it left unseen is not resolved.
func TestVerdictsSayWhatTheyCouldNotSee(t *testing.T) {
	remote := func(in RemoteInput) Storage { return MergeRemote(BuildStorage(coverageInput(), nil), in, nil) }
	tests := []struct {
		name                 string
		st                   Storage
		writes, safe, status string
		covers               map[string]bool // Storage.Covers by warning mount
		answered             map[string]bool // Storage.Answered by warning mount
	}{
		{
			name:   "every host answered",
			st:     remote(RemoteInput{Exporters: []string{"gpu-1", "gpu-2"}}),
			writes: "(ok) No — no process is writing to /shared.", safe: "(ok) Yes — nothing writes to /shared", status: "(ok) no writes to /shared",
			covers: map[string]bool{"/shared": true, "gpu-1:/shared": true},
		},
		{
			name:     "Prometheus did not answer",
			st:       remote(RemoteInput{WritersErr: "no answer within 2s", KnownHosts: []string{"gpu-1", "gpu-2", "gpu-3"}}),
			writes:   "(?) Can't tell for 3 hosts: Prometheus did not answer within 2s. On this host no process writes to /shared.",
			safe:     "(?) Can't tell for 3 hosts: Prometheus did not answer within 2s. On this host no process writes to /shared; no output resolves inside it.",
			status:   "(?) writes to /shared unknown for 3 hosts (Prometheus did not answer within 2s; none on this host)",
			covers:   map[string]bool{"/shared": true, "gpu-1:/shared": false, "gpu-9:/shared": false},
			answered: map[string]bool{"/shared": true, "gpu-1:/shared": false},
		},
		{
			name:   "Prometheus did not answer and the run's hosts are not known",
			st:     remote(RemoteInput{WritersErr: "query: connection refused"}),
			writes: "(?) Can't tell for the other hosts: the writer query to Prometheus failed: query: connection refused.",
			safe:   "(?) Can't tell for the other hosts", status: "(?) writes to /shared unknown for the other hosts",
		},
		{
			name:   "an exporter is silent",
			st:     remote(RemoteInput{Exporters: []string{"gpu-1"}, Silent: []SilentHost{{Host: "gpu-2", Why: "its exporter did not answer Prometheus's last scrape (up = 0)"}}}),
			writes: "(?) Can't tell for host gpu-2: its exporter did not answer Prometheus's last scrape (up = 0). On this host no process writes to /shared, nor on the other host whose exporter answered.",
			safe:   "(?) Can't tell for host gpu-2", status: "(?) writes to /shared unknown for host gpu-2",
			covers:   map[string]bool{"/shared": true, "gpu-1:/shared": true, "gpu-2:/shared": false},
			answered: map[string]bool{"gpu-1:/shared": true, "gpu-2:/shared": false},
		},
		{
			name: "an exporter is silent, but node_exporter says its device wrote nothing",
			st: remote(RemoteInput{Exporters: []string{"gpu-1"}, Silent: []SilentHost{{Host: "gpu-2", Why: "its exporter did not answer Prometheus's last scrape (up = 0)"}},
				Paths:   PlaceOnHosts([]PathObservation{{Path: "/shared", Role: RoleProtected}}, []probes.RemoteHost{{Name: "gpu-2", Filesystems: []probes.RemoteFS{{Mount: probes.Mount{MountPoint: "/shared", FSType: "xfs", Source: "/dev/sdb"}, Usage: usage(1e12, 2e12)}}}}),
				Devices: map[string]map[string]DeviceWrites{"gpu-2": {"/shared": {Device: "/dev/sdb", Seconds: 300}}}}),
			writes: "(ok) No — no process is writing to /shared. On host gpu-2 /shared's device (/dev/sdb) wrote 0 B in the last 5 min.",
			safe:   "(ok) Yes", status: "(ok) no writes to /shared",
			covers: map[string]bool{"/shared": true, "gpu-2:/shared": true},
		},
		{
			name:   "one host, no Prometheus",
			st:     BuildStorage(coverageInput(), nil),
			writes: "(ok) No — no process is writing to /shared.", safe: "(ok) Yes — nothing writes to /shared", status: "(ok) no writes to /shared",
			covers: map[string]bool{"/shared": true},
		},
		{
			name:   "a host of the run runs no exporter",
			st:     remote(RemoteInput{Exporters: []string{"gpu-1"}, Unexported: []string{"gpu-3"}}),
			writes: "(?) Can't tell for host gpu-3: no bot exporter reports its processes; run bot exporter on gpu-3. On this host no process writes to /shared, nor on the other host whose exporter answered.",
			safe:   "(?) Can't tell for host gpu-3", status: "(?) writes to /shared unknown for host gpu-3",
			covers:   map[string]bool{"/shared": true, "gpu-1:/shared": true, "gpu-3:/shared": false},
			answered: map[string]bool{"gpu-3:/shared": false},
		},
		{
			name:   "five hosts of the run run no exporter",
			st:     remote(RemoteInput{Exporters: []string{"gpu-1"}, Unexported: []string{"gpu-3", "gpu-4", "gpu-5", "gpu-6", "gpu-7"}}),
			writes: "(?) Can't tell for 5 hosts: no bot exporter reports their processes; run bot exporter on gpu-3, gpu-4, gpu-5 and 2 more. On this host",
			safe:   "(?) Can't tell for 5 hosts", status: "(?) writes to /shared unknown for 5 hosts",
		},
		{
			name:   "none of the run's 16 hosts runs an exporter: said once",
			st:     remote(RemoteInput{Unexported: hostNames(16)}),
			writes: "(?) Can't tell for 16 hosts: none of them runs bot exporter, so I see this machine's processes only; run it on each (docs/multi-host.md). On this host no process writes to /shared.",
			safe:   "(?) Can't tell for 16 hosts", status: "(?) writes to /shared unknown for 16 hosts",
		},
		{
			name: "a host without an exporter whose device wrote nothing",
			st: remote(RemoteInput{Exporters: []string{"gpu-1"}, Unexported: []string{"gpu-2"},
				Paths:   PlaceOnHosts([]PathObservation{{Path: "/shared", Role: RoleProtected}}, []probes.RemoteHost{{Name: "gpu-2", Filesystems: []probes.RemoteFS{{Mount: probes.Mount{MountPoint: "/shared", FSType: "xfs", Source: "/dev/sdb"}, Usage: usage(1e12, 2e12)}}}}),
				Devices: map[string]map[string]DeviceWrites{"gpu-2": {"/shared": {Device: "/dev/sdb", Seconds: 300}}}}),
			writes: "(ok) No — no process is writing to /shared. On host gpu-2 /shared's device (/dev/sdb) wrote 0 B in the last 5 min.",
			safe:   "(ok) Yes", status: "(ok) no writes to /shared",
			covers: map[string]bool{"/shared": true, "gpu-2:/shared": true},
		},
		{
			name:   "another host's exporter could not inspect processes",
			st:     remote(RemoteInput{Exporters: []string{"gpu-1"}, Invisible: map[string]int{"gpu-1": 4}}),
			writes: "(~) No writes seen to /shared, but on host gpu-1 4 processes could not be inspected by its exporter.",
			safe:   "(~) Probably", status: "(~) no writes seen to /shared (4 processes not visible on gpu-1)",
			covers:   map[string]bool{"/shared": true, "gpu-1:/shared": false},
			answered: map[string]bool{"gpu-1:/shared": true},
		},
		{
			name: "this host's scan could not inspect a process",
			st: func() Storage {
				in := coverageInput()
				in.Scan.Invisible = 1
				in.Scan.Hidden = []probes.HiddenProcess{{PID: 1, Command: "tini"}}
				return BuildStorage(in, nil)
			}(),
			writes: "(~) No writes seen to /shared, but 1 process could not be inspected: tini pid 1.",
			safe:   "(~) Probably", status: "(~) no writes seen to /shared (1 process not visible: tini pid 1)",
			covers:   map[string]bool{"/shared": false},
			answered: map[string]bool{"/shared": true},
		},
		{
			name: "this host's scan failed",
			st: func() Storage {
				in := coverageInput()
				in.Scan, in.ScanErr = nil, errors.New("scan /proc: permission denied")
				return BuildStorage(in, nil)
			}(),
			writes: "(!) Unknown — I could not scan open files: scan /proc: permission denied.",
			safe:   "(!) Can't tell — I could not scan open files", status: "(!) writes to /shared unknown (the open-files scan failed)",
			covers:   map[string]bool{"/shared": false},
			answered: map[string]bool{"/shared": false},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			writes, safe, status := firstLines(tt.st)
			if !strings.HasPrefix(PlainText(writes), tt.writes) {
				t.Errorf("writes verdict = %q; want it to start %q", PlainText(writes), tt.writes)
			}
			if !strings.HasPrefix(PlainText(safe), tt.safe) {
				t.Errorf("safe verdict = %q; want it to start %q", PlainText(safe), tt.safe)
			}
			if !strings.Contains(status, tt.status) {
				t.Errorf("status = %q; want %q", status, tt.status)
			}
			for mount, want := range tt.covers {
				if got := tt.st.Covers(mount); got != want {
					t.Errorf("Covers(%q) = %v; want %v (coverage %+v)", mount, got, want, tt.st.Coverage)
				}
			}
			for mount, want := range tt.answered {
				if got := tt.st.Answered(mount); got != want {
					t.Errorf("Answered(%q) = %v; want %v (coverage %+v)", mount, got, want, tt.st.Coverage)
				}
			}
		})
	}
}

// TestVerdictsWithWritersStillNameTheUnseen: a yes stays a yes when a host is silent, and says which
// hosts it could not see beside it: "1 process is writing" is not all of them.
func TestVerdictsWithWritersStillNameTheUnseen(t *testing.T) {
	st := MergeRemote(BuildStorage(coverageInput(), nil), RemoteInput{
		Exporters: []string{"gpu-1"},
		Writers:   []WriterInfo{{Host: "gpu-1", Command: "extract", File: "/shared", ProtectedPath: "/shared", Protected: true, Processes: 1}},
		Silent:    []SilentHost{{Host: "gpu-2", Why: "its exporter did not answer Prometheus's last scrape (up = 0)"}},
	}, nil)
	text := AnswerWrites("synth", st, Target{}).Text()
	if !strings.Contains(text, "(!!) Yes — 1 process is writing to /shared") || !strings.Contains(text, "(?) Can't tell for host gpu-2") {
		t.Errorf("AnswerWrites =\n%s\nwant yes, and can't tell for gpu-2 beside it", text)
	}
}

// TestDeviceCountersAnswerWhereTheScanCannot: /shared on its own device, which wrote 0 B over five minutes,
// is a plain "No" even when other users' processes cannot be inspected, and says where the job does write;
// a device that wrote, or a window too short for the page cache to have reached the device, is no evidence.
func TestDeviceCountersAnswerWhereTheScanCannot(t *testing.T) {
	in := func(d DeviceWrites) StorageInput {
		in := coverageInput()
		in.Scan.Invisible = 118
		in.Scan.Hidden = []probes.HiddenProcess{{PID: 812, Command: "sshd"}}
		in.Scan.User = probes.ProcessOwner{UID: 1000, User: "alice"}
		in.Scan.Owners = []probes.ProcessOwner{{UID: 0, User: "root", Processes: 110}, {UID: 70, User: "postgres", Processes: 8}}
		in.Devices = map[string]DeviceWrites{"/shared": d}
		return in
	}
	tests := []struct {
		name   string
		d      DeviceWrites
		writes string
		status string
	}{
		{"quiet for 5 min", DeviceWrites{Device: "nas:/export", Bytes: 0, Seconds: 300},
			"(ok) No — /shared's device (nas:/export) wrote 0 B in the last 5 min, so none of the 118 processes I could not inspect writes there. The job writes to /data: python3 (pid 4242) → /data/synth/out/part-0001.jsonl.",
			"(ok) no writes to /shared (the device wrote 0 B in the last 5 min)"},
		{"wrote", DeviceWrites{Device: "nas:/export", Bytes: 4096, Seconds: 300},
			"(~) No writes seen to /shared, but 118 processes could not be inspected: sshd pid 812, 117 more; other users' (root 110, postgres 8): I run as alice and see every process of alice's, the job's too if it runs as alice; root would see the rest. The job writes to /data",
			"(~) no writes seen to /shared (118 processes not visible"},
		{"quiet for 20 s only", DeviceWrites{Device: "nas:/export", Bytes: 0, Seconds: 20}, "(~) No writes seen to /shared", "(~) no writes seen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			writes, _, status := firstLines(BuildStorage(in(tt.d), nil))
			if !strings.HasPrefix(PlainText(writes), tt.writes) {
				t.Errorf("writes verdict = %q; want it to start %q", PlainText(writes), tt.writes)
			}
			if !strings.Contains(status, tt.status) {
				t.Errorf("status = %q; want %q", status, tt.status)
			}
		})
	}
}

// An answer from storage evidence a sample interval old says when it is from; a fresh one, or one
// that does not say when it was read, says nothing of it.
func TestStorageAgeIsSaidWhenTheEvidenceIsOld(t *testing.T) {
	now := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	st := BuildStorage(coverageInput(), nil)
	st.AsOf = now.Add(-25 * time.Second)
	for _, tc := range []struct {
		name string
		asOf time.Time
		want string
	}{
		{"25 s old", st.AsOf, "writers and free space as of 25 s ago"},
		{"3 s old", now.Add(-3 * time.Second), ""},
		{"not said", time.Time{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := st
			s.AsOf = tc.asOf
			if got := StorageAge(s, now); got != tc.want {
				t.Errorf("StorageAge(as of %v, at %v) = %q; want %q", s.AsOf, now, got, tc.want)
			}
		})
	}
	status := RenderStatus(RunStatus{Name: "synth", Storage: st}, now, time.UTC).Text()
	if !strings.Contains(status, "writers and free space as of 25 s ago") {
		t.Errorf("status from storage evidence 25 s old does not say so:\n%s", status)
	}
}

// TestVerdictMarksAgree: from the same facts, "are we writing to /shared?", "is it safe?" and the
// status's storage line lead with the same mark, whatever mix of this host's scan (clean, a writer
// under /shared, a process it could not inspect, failed), an output landing on /shared or not, and
// the other hosts (none, all answered, silent, without an exporter, Prometheus down, a writer, processes
// their exporter could not inspect, a silent host whose device wrote nothing).
func TestVerdictMarksAgree(t *testing.T) {
	locals := map[string]func(*StorageInput){
		"clean": func(*StorageInput) {},
		"writer on /shared": func(in *StorageInput) {
			in.Scan.Writers = append(in.Scan.Writers, probes.Writer{PID: 4343, Command: "extract", File: "/shared/h/part-0.safetensors", MountID: mShared.ID, Flags: 0o100001})
		},
		"a process not inspected": func(in *StorageInput) {
			in.Scan.Invisible, in.Scan.Hidden = 1, []probes.HiddenProcess{{PID: 1, Command: "tini"}}
		},
		"scan failed": func(in *StorageInput) { in.Scan, in.ScanErr = nil, errors.New("scan /proc: permission denied") },
	}
	outputs := map[string]func(*StorageInput){
		"no output on /shared": func(*StorageInput) {},
		"an output on /shared": func(in *StorageInput) {
			in.Paths = append(in.Paths, PathObservation{Path: "/data/synth/hidden", Role: RoleOutput, Resolved: "/shared/hidden", Exists: true, Mount: mShared, HasMount: true, Usage: usage(50e12, 100e12)})
		},
	}
	quietGPU2 := func(in RemoteInput) RemoteInput {
		in.Paths = PlaceOnHosts([]PathObservation{{Path: "/shared", Role: RoleProtected}}, []probes.RemoteHost{{Name: "gpu-2", Filesystems: []probes.RemoteFS{{Mount: probes.Mount{MountPoint: "/shared", FSType: "xfs", Source: "/dev/sdb"}, Usage: usage(1e12, 2e12)}}}})
		in.Devices = map[string]map[string]DeviceWrites{"gpu-2": {"/shared": {Device: "/dev/sdb", Seconds: 300}}}
		return in
	}
	silent := []SilentHost{{Host: "gpu-2", Why: "its exporter did not answer Prometheus's last scrape (up = 0)"}}
	remotes := map[string]*RemoteInput{
		"no other host":              nil,
		"every host answered":        {Exporters: []string{"gpu-1", "gpu-2"}},
		"a silent exporter":          {Exporters: []string{"gpu-1"}, Silent: silent},
		"a host without an exporter": {Exporters: []string{"gpu-1"}, Unexported: []string{"gpu-3"}},
		"Prometheus down":            {WritersErr: "no answer within 2s", KnownHosts: []string{"gpu-1", "gpu-2"}},
		"a writer on gpu-1": {Exporters: []string{"gpu-1"},
			Writers: []WriterInfo{{Host: "gpu-1", Command: "extract", File: "/shared/x", ProtectedPath: "/shared", Protected: true, Processes: 1}}},
		"processes gpu-1's exporter could not inspect": {Exporters: []string{"gpu-1"}, Invisible: map[string]int{"gpu-1": 4}},
		"a silent exporter whose device wrote nothing": func() *RemoteInput {
			in := quietGPU2(RemoteInput{Exporters: []string{"gpu-1"}, Silent: silent})
			return &in
		}(),
	}
	mark := regexp.MustCompile(`^\((ok|~|\?|!|!!)\)`)
	for ln, local := range locals {
		for on, output := range outputs {
			for rn, remote := range remotes {
				in := coverageInput()
				scan := *in.Scan
				in.Scan = &scan
				local(&in)
				output(&in)
				st := BuildStorage(in, nil)
				if remote != nil {
					st = MergeRemote(st, *remote, nil)
				}
				writes, safe, status := firstLines(st)
				status, _ = strings.CutPrefix(status, "Storage: ")
				marks := []string{mark.FindString(PlainText(writes)), mark.FindString(PlainText(safe)), mark.FindString(status)}
				if marks[0] == "" || marks[0] != marks[1] || marks[0] != marks[2] {
					t.Errorf("%s, %s, %s: marks differ:\nwrites: %s\nsafe:   %s\nstatus: %s", ln, on, rn, PlainText(writes), PlainText(safe), status)
				}
				if ln == "scan failed" {
					// However the verdict reads, the failed scan is said.
					for _, m := range []Message{AnswerWrites("synth", st, Target{}), AnswerSafe("synth", st, Target{})} {
						if text := m.Text(); !strings.Contains(text, "could not scan open files") {
							t.Errorf("%s, %s, %s: the answer does not say this host's scan failed:\n%s", ln, on, rn, text)
						}
					}
				}
			}
		}
	}
}
