package reports

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"runwatch/probes"
)

// A GPU host: ext4 root, xfs /data, NFS /shared, a bind mount of /shared/team at /home/ml/team.
var (
	mRoot   = probes.Mount{ID: 20, Parent: 1, Major: 259, Minor: 2, MountPoint: "/", FSType: "ext4", Source: "/dev/nvme0n1p2"}
	mData   = probes.Mount{ID: 30, Parent: 20, Major: 259, Minor: 3, MountPoint: "/data", FSType: "xfs", Source: "/dev/nvme1n1"}
	mShared = probes.Mount{ID: 40, Parent: 20, Major: 0, Minor: 52, MountPoint: "/shared", FSType: "nfs4", Source: "nas:/export"}
	mBind   = probes.Mount{ID: 41, Parent: 20, Major: 0, Minor: 52, Root: "/team", MountPoint: "/home/ml/team", FSType: "nfs4", Source: "nas:/export"}
	mProc   = probes.Mount{ID: 50, Parent: 20, Major: 0, Minor: 22, MountPoint: "/proc", FSType: "proc", Source: "proc"}
	table   = probes.NewMountTable([]probes.Mount{mRoot, mData, mShared, mBind, mProc})
)

func usage(free, total uint64) *probes.Usage {
	return &probes.Usage{Free: free, Total: total, Used: total - free}
}

func storageInput() StorageInput {
	return StorageInput{
		Table: table,
		Paths: []PathObservation{
			{Path: "/data/synth/out", Role: RoleOutput, Resolved: "/data/synth/out", Exists: true, Mount: mData, HasMount: true, Usage: usage(2.8e12, 7.68e12)},
			{Path: "/home/ml/samples", Role: RoleOutput, Resolved: "/shared/ml/samples", Exists: true, Mount: mShared, HasMount: true, Usage: usage(50e12, 100e12)},
			{Path: "/data", Role: RoleWatch, Resolved: "/data", Exists: true, Mount: mData, HasMount: true, Usage: usage(2.8e12, 7.68e12)},
			{Path: "/shared", Role: RoleProtected, Resolved: "/shared", Exists: true, Mount: mShared, HasMount: true, Usage: usage(50e12, 100e12)},
		},
		Scan: &probes.WriterScan{Processes: 300, Invisible: 12, Writers: []probes.Writer{
			{PID: 4242, Command: "python3", File: "/data/synth/out/part-0001.jsonl", MountID: 30, Flags: 0o100001},
			{PID: 4242, Command: "python3", File: "/shared/ml/samples/part-0001.jsonl", MountID: 40, Flags: 0o100001},
			{PID: 5150, Command: "extract", File: "/home/ml/team/hs/shard-0.bin", MountID: 41, Flags: 0o100002},
			{PID: 6000, Command: "journald", File: "/var/log/journal/x.journal", MountID: 20, Flags: 0o100002},
			{PID: 7000, Command: "bash", File: "/proc/self/attr", MountID: 50, Flags: 0o100001},
			{PID: 8000, Command: "gone", File: "/data/tmp/x (deleted)", MountID: 30, Flags: 0o100001},
		}},
		WriteRates: map[string]float64{"/data": 45e6},
		FillRates:  map[string]FillTrend{"/data": {Rate: 45e6, Span: 2 * 3600, Readings: 240}}, // 17 h to full, watched for 2 h
	}
}

func TestBuildStorage(t *testing.T) {
	st := BuildStorage(storageInput(), func(string) (float64, bool) { return 5 * 3600, true })
	if len(st.Paths) != 3 || len(st.ProtectedMounts) != 1 {
		t.Fatalf("paths %d protected %d; want 3 and 1", len(st.Paths), len(st.ProtectedMounts))
	}
	if !st.Paths[1].Protected || st.Paths[0].Protected {
		t.Errorf("protected flags = %v, %v; want the symlinked output on /shared protected only", st.Paths[0].Protected, st.Paths[1].Protected)
	}
	if !st.ProtectedWrites || st.Invisible != 12 {
		t.Errorf("protected_writes %v invisible %d", st.ProtectedWrites, st.Invisible)
	}
	byPID := map[int][]WriterInfo{}
	for _, w := range st.Writers {
		byPID[w.PID] = append(byPID[w.PID], w)
	}
	if len(byPID[7000]) != 0 {
		t.Errorf("a /proc file was listed as a writer")
	}
	if ws := byPID[5150]; len(ws) != 1 || !ws[0].Protected || ws[0].Mount != "/home/ml/team" {
		t.Errorf("bind-mounted write = %+v; want protected (same filesystem as /shared)", ws)
	}
	if ws := byPID[6000]; len(ws) != 0 {
		t.Errorf("journald on / is not on a watched mount, got %+v", ws)
	}
	if ws := byPID[8000]; len(ws) != 1 || ws[0].Protected {
		t.Errorf("deleted file on /data = %+v", ws)
	}
	if st.Writers[0].Protected != true {
		t.Errorf("writers not sorted protected-first: %+v", st.Writers[0])
	}
	if st.Paths[0].FillsInS == nil || int(*st.Paths[0].FillsInS) != 62222 {
		t.Errorf("fills_in_s = %v; want free/rate", st.Paths[0].FillsInS)
	}
	kinds := map[string]int{}
	for _, w := range st.Warnings {
		kinds[w.Kind]++
	}
	if kinds["protected_write"] != 1 || kinds["output_on_protected"] != 1 || kinds["disk_full"] != 0 {
		t.Errorf("warnings = %v; want one protected write warning for /shared, one output on protected, no disk_full (17 h > 5 h)", kinds)
	}
	for _, w := range st.Warnings {
		if w.Kind == "protected_write" && !strings.Contains(w.Message, "2 processes are writing to protected `/shared`") {
			t.Errorf("protected write warning = %q; want both processes counted against /shared", w.Message)
		}
	}
	// The job needs longer than the disk lasts: a disk_full warning.
	st = BuildStorage(storageInput(), func(string) (float64, bool) { return 30 * 3600, true })
	found := false
	for _, w := range st.Warnings {
		if w.Kind == "disk_full" && w.Mount == "/data" && strings.Contains(w.Message, "fills in") {
			found = true
		}
	}
	if !found {
		t.Errorf("warnings = %+v; want disk_full on /data", st.Warnings)
	}
}

func TestBuildStorageFailures(t *testing.T) {
	in := storageInput()
	in.Paths[0].Usage, in.Paths[0].UsageErr = nil, errors.New("statfs /data: not responding after 2s")
	in.Scan, in.ScanErr = nil, errors.New("read /proc: permission denied")
	st := BuildStorage(in, nil)
	if st.Paths[0].FreeBytes != nil || !strings.Contains(st.Paths[0].Error, "not responding") {
		t.Errorf("hung statfs path = %+v", st.Paths[0])
	}
	if st.ProtectedWrites || len(st.Writers) != 0 {
		t.Errorf("no scan: writers %v", st.Writers)
	}
	m := AnswerWrites("synth", st, Target{})
	if !strings.Contains(m.Sections[0], "Unknown") {
		t.Errorf("AnswerWrites without a scan = %q; want an Unknown verdict", m.Sections[0])
	}
	// The status line must not give the all-clear either.
	if v := StorageVerdict(st, nil); strings.Contains(v, "no writes") || !strings.Contains(v, "unknown (the open-files scan failed)") {
		t.Errorf("StorageVerdict without a scan = %q; want writes unknown, not an all-clear", v)
	}
}

func TestAnswerWrites(t *testing.T) {
	st := BuildStorage(storageInput(), nil)
	tests := []struct {
		name   string
		st     Storage
		target Target
		want   []string
	}{
		{"protected yes", st, Target{}, []string{"*Yes*", "2 processes are writing to `/shared`", "`python3` (pid 4242)", "Where the outputs resolve", "/home/ml/samples"}},
		{"path yes", st, Target{Path: "/data", Resolved: "/data", Exists: true, Mount: "/data", FSType: "xfs", Device: "/dev/nvme1n1", MountPoint: true}, []string{"*Yes*", "writing to `/data`"}},
		{"path no", st, Target{Path: "/data/empty", Resolved: "/data/empty", Exists: true, Mount: "/data", FSType: "xfs"}, []string{"No writes seen", "12 processes could not be inspected"}},
		// The job writes to /shared through a bind mount at /mnt/b: the status says it writes to
		// protected /shared, and so must the answer to "are we writing to /shared?".
		{"protected path through a bind mount", Storage{ProtectedMounts: []PathInfo{{Path: "/shared", Mount: "/shared"}},
			Writers: []WriterInfo{{PID: 7, Command: "python3", File: "/mnt/b/out.jsonl", Mount: "/mnt/b", Protected: true, ProtectedPath: "/shared"}}},
			Target{Path: "/shared", Resolved: "/shared", Exists: true, Mount: "/shared", MountPoint: true}, []string{"*Yes*", "`python3` (pid 7)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := AnswerWrites("synth", tt.st, tt.target).Mrkdwn()
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("AnswerWrites = %q; want %q", text, w)
				}
			}
		})
	}
	clean := storageInput()
	clean.Scan.Writers = clean.Scan.Writers[:1]
	clean.Scan.Invisible = 0
	text := AnswerWrites("synth", BuildStorage(clean, nil), Target{}).Mrkdwn()
	// No writer there, but an output resolves inside /shared: the answer leads with that landing.
	if !strings.Contains(text, SeverityLanding+" *Not yet* — no writes seen to `/shared`, but 1 output resolves inside it") {
		t.Errorf("clean AnswerWrites = %q", text)
	}
}

// One fact, one severity: an output symlinked into a protected mount read "(!!)" in where, "(!)" in
// storage and status and "(~) Not yet, but" in safe and writes. Every answer takes its glyph from
// ProtectedSeverity: a landing with nothing writing there yet, an alarm once a process writes there.
func TestProtectedSeverityIsOneAcrossAnswers(t *testing.T) {
	landing := Storage{
		ProtectedMounts: []PathInfo{{Path: "/shared", Mount: "/shared", Protected: true, Role: RoleProtected}},
		Paths: []PathInfo{
			{Path: "/data/out", Resolved: "/data/out", Exists: true, Mount: "/data", Role: RoleOutput},
			{Path: "/data/hs", Resolved: "/shared/hs", Exists: true, Mount: "/shared", Role: RoleOutput, Protected: true, ProtectedPath: "/shared"},
		},
		Warnings: []StorageWarning{{Kind: "output_on_protected", Mount: "/shared", Message: "Output `/data/hs` resolves to `/shared/hs`, inside protected `/shared`."}},
	}
	writing := landing
	writing.Writers = []WriterInfo{{PID: 9, Command: "extract", File: "/shared/hs/shard-0.bin", Mount: "/shared", Protected: true, ProtectedPath: "/shared", Output: true}}
	writing.ProtectedWrites = true
	for _, tt := range []struct {
		name string
		st   Storage
		want string
	}{{"landing, no writes yet", landing, SeverityLanding}, {"landing with a writer", writing, SeverityWriting}} {
		t.Run(tt.name, func(t *testing.T) {
			status := RenderStatus(RunStatus{Name: "demo", Storage: tt.st}, time.Unix(0, 0), time.UTC)
			answers := map[string]string{
				"where":          AnswerWhere("demo", tt.st).Sections[0],
				"writes":         AnswerWrites("demo", tt.st, Target{}).Sections[0],
				"safe":           AnswerSafe("demo", tt.st, Target{}).Sections[0],
				"status":         StorageVerdict(tt.st, nil),
				"status warning": status.Sections[2],
				"warning":        tt.st.WarningSeverity(tt.st.Warnings[0]),
			}
			for name, text := range answers {
				if !strings.HasPrefix(strings.TrimPrefix(text, "Storage: "), tt.want) {
					t.Errorf("%s = %q; want it to start with %s", name, text, tt.want)
				}
			}
			// The output's own line in the list carries the same mark.
			if lines := AnswerWhere("demo", tt.st).Sections[1]; !strings.Contains(lines, tt.want+" *inside protected `/shared`*") {
				t.Errorf("where's output lines = %q; want the output marked %s", lines, tt.want)
			}
		})
	}
}

// "will the disk fill?" is answered by the space answer: it says so when the write rate would take
// more than a month to fill the disk, and a capacity plan that does not fit on the mount is named
// on the mount's line: the demo's answer said "Writing 18.1 kB/s." and nothing about the 1.08 TB of
// hidden states that do not fit in its 73 GB.
func TestAnswerFreeSaysWhetherItFills(t *testing.T) {
	free, total, used := uint64(73<<30), uint64(271<<30), uint64(198<<30)
	no := false
	paths := []PathInfo{{Path: "/data/out", Mount: "/data", FSType: "ext4", Device: "/dev/vda", Role: RoleOutput,
		FreeBytes: &free, TotalBytes: &total, UsedBytes: &used}}
	rates := []WriteRate{{Mount: "/data", BytesPerS: 18e3}}
	plans := []PlanResult{{Name: "hidden-states", Mount: "/data", BytesNeeded: 1.08e12, FreeBytes: &free, Fits: &no}}
	got := AnswerFree("demo", paths, rates, nil, plans).Text()
	for _, want := range []string{"Writing 18.0 kB/s. At that rate it lasts over a month",
		"Plan hidden-states does not fit here: it needs 1.08 TB"} {
		if !strings.Contains(got, want) {
			t.Errorf("AnswerFree = %q; want it to say %q", got, want)
		}
	}
	if got := AnswerFree("demo", paths, nil, nil, nil).Text(); strings.Contains(got, "month") || strings.Contains(got, "plan") {
		t.Errorf("AnswerFree without a rate or plans = %q; want neither a fill verdict nor a plan", got)
	}
	// A write rate that would fill the disk within a month with no time to full beside it: the demo's "Writing
	// 25.0 kB/s." of 64.7 GB said nothing more. It is that rate's time to full, against the job's.
	small := uint64(64_700_000_000)
	paths[0].FreeBytes = &small
	rates = []WriteRate{{Mount: "/data", BytesPerS: 25e3}}
	got = AnswerFree("demo", paths, rates, nil, nil).Text()
	if want := "Writing 25.0 kB/s. At that rate it fills in 29 d 23 h."; !strings.Contains(got, want) {
		t.Errorf("AnswerFree = %q; want it to say %q", got, want)
	}
	for _, tt := range []struct {
		etaS float64
		want string
	}{
		{3600, "At that rate it fills in 29 d 23 h; the job needs 1 h more, so it lasts."},
		// A write rate is the writes between two readings: it may say the disk lasts, not that it will not.
		{40 * 86400, "At that rate it would fill in 29 d 23 h, before the job ends (40 d more); free space has not shrunk that fast for long enough to say it will, and a warning follows if it does."},
	} {
		if got := AnswerFree("demo", paths, rates, &tt.etaS, nil).Text(); !strings.Contains(got, tt.want) {
			t.Errorf("AnswerFree with %v s left = %q; want it to say %q", tt.etaS, got, tt.want)
		}
	}
}

// A time to full from the free-space trend that is not this write rate says the pace it is from:
// "Writing 1.66 kB/s. At the current rate it fills in 12 d" of 72.8 GB contradicted itself.
func TestAnswerFreeNamesTheShrinkRate(t *testing.T) {
	free, total, used := uint64(72_800_000_000), uint64(271e9), uint64(198e9)
	fills := 12*86400 + 4*3600.0
	paths := []PathInfo{{Path: "/data/out", Mount: "/data", FSType: "ext4", Device: "/dev/vda", Role: RoleOutput,
		FreeBytes: &free, TotalBytes: &total, UsedBytes: &used, FillsInS: &fills}}
	no := false
	plans := []PlanResult{{Name: "hs", Mount: "/data", BytesNeeded: 1.09e12, Fits: &no}, {Name: "all", Mount: "/data", BytesNeeded: 21.9e12, Fits: &no}}
	got := AnswerFree("demo", paths, []WriteRate{{Mount: "/data", BytesPerS: 1660}}, nil, plans).Text()
	for _, want := range []string{"Writing 1.66 kB/s. Free space shrinks at 69.3 kB/s: it fills in 12 d 4 h",
		"Plans hs (1.09 TB) and all (21.9 TB) do not fit here."} {
		if !strings.Contains(got, want) {
			t.Errorf("AnswerFree = %q; want it to say %q", got, want)
		}
	}
}

// The space answer names every configured path and plan target on the mount, not only the first: the
// demo's "/ has 71.9 GB free — holds …/data/output" left out the hidden states going to the same disk.
// Past maxHeld paths the rest are counted.
func TestAnswerFreeNamesEveryPathOnTheMount(t *testing.T) {
	free, total, used := uint64(73<<30), uint64(271<<30), uint64(198<<30)
	on := func(path, mount string) PathInfo {
		return PathInfo{Path: path, Mount: mount, FSType: "ext4", Device: "/dev/vda", Role: RoleOutput, FreeBytes: &free, TotalBytes: &total, UsedBytes: &used}
	}
	paths := []PathInfo{on("/data/out", "/data"), on("/scratch/x", "/scratch"), on("/data/hs", "/data")}
	plans := []PlanResult{{Name: "hs", Target: "/data/hs", Mount: "/data"}, {Name: "all", Target: "/data/all", Mount: "/data"}}
	got := AnswerFree("demo", paths, nil, nil, plans).Text()
	if want := "holds /data/out, /data/hs and /data/all."; !strings.Contains(got, want) {
		t.Errorf("AnswerFree = %q; want %q", got, want)
	}
	if !strings.Contains(got, "holds /scratch/x.") {
		t.Errorf("AnswerFree = %q; want /scratch to hold /scratch/x alone", got)
	}
	paths = append(paths, on("/data/a", "/data"), on("/data/b", "/data"))
	got = AnswerFree("demo", paths, nil, nil, plans).Text()
	if want := "holds /data/out, /data/hs, /data/a and 2 more."; !strings.Contains(got, want) {
		t.Errorf("AnswerFree with five paths on /data = %q; want %q", got, want)
	}
}

// The status storage line carries, beside a mount's time to full, each plan that does not fit there, as the
// space answer does: "fills in 17 h" alone reads as safe above a plan two lines down that needs ten times the
// free space. A plan that fits, or one on another mount, adds nothing.
func TestStorageVerdictNamesUnfitPlans(t *testing.T) {
	st := BuildStorage(storageInput(), func(string) (float64, bool) { return 5 * 3600, true })
	no, yes := false, true
	hs := PlanResult{Name: "hidden-states", Target: "/data/hs", Mount: "/data", BytesNeeded: 25e12, BytesHigh: 30e12, Fits: &no}
	small := PlanResult{Name: "logits", Target: "/data/logits", Mount: "/data", BytesNeeded: 1e9, Fits: &yes}
	all := PlanResult{Name: "all-layers", Target: "/data/all", Mount: "/data", BytesNeeded: 400e12, Fits: &no}
	onShared := PlanResult{Name: "shared-plan", Target: "/shared/x", Mount: "/shared", BytesNeeded: 1e9, Fits: &yes}
	for _, tt := range []struct {
		name  string
		plans []PlanResult
		want  string
	}{
		{"none", nil, "`/data` 2.80 TB free, fills in 17 h ·"},
		{"fits", []PlanResult{small, onShared}, "`/data` 2.80 TB free, fills in 17 h ·"},
		{"one does not fit", []PlanResult{small, hs, onShared}, "`/data` 2.80 TB free, fills in 17 h at the current rate; :red_circle: hidden-states needs 30.0 TB: does not fit ·"},
		{"two do not fit", []PlanResult{hs, all}, "`/data` 2.80 TB free, fills in 17 h at the current rate; :red_circle: hidden-states (30.0 TB) and all-layers (400 TB) do not fit ·"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := StorageVerdict(st, tt.plans); !strings.Contains(got, tt.want) {
				t.Errorf("StorageVerdict = %q; want %q", got, tt.want)
			}
			if got := RenderStatus(RunStatus{Name: "demo", Storage: st, Plans: tt.plans}, time.Unix(0, 0), time.UTC).Text(); !strings.Contains(got, PlainText(tt.want)) {
				t.Errorf("status = %q; want its storage line to carry %q", got, PlainText(tt.want))
			}
		})
	}
}

// With more writers than a report lists, the number of processes writing to a protected mount is
// counted over all of them, and the report keeps a copy of the listed ones only.
func TestProtectedWriterCountIsTakenBeforeTheCut(t *testing.T) {
	in := storageInput()
	in.Scan = &probes.WriterScan{Processes: 600}
	for pid := 10_000; pid < 10_500; pid++ {
		for fd := range 19 {
			in.Scan.Writers = append(in.Scan.Writers, probes.Writer{PID: pid, Command: "extract", FD: fd + 3,
				File: fmt.Sprintf("/shared/hs/%d-%02d.bin", pid, fd), MountID: 40, Flags: 0o100001})
		}
	}
	st := BuildStorage(in, nil)
	if len(st.Writers) != maxWriters || cap(st.Writers) != maxWriters || st.WritersOmitted != 500*19-maxWriters {
		t.Errorf("writers: %d listed (capacity %d), %d omitted; want %d listed in a copy of their own and %d omitted",
			len(st.Writers), cap(st.Writers), st.WritersOmitted, maxWriters, 500*19-maxWriters)
	}
	if got := st.ProtectedProcesses["/shared"]; got != 500 {
		t.Errorf("ProtectedProcesses[/shared] = %d; want 500", got)
	}
	// The bot's report keeps no uncut list; the exporter's classification keeps every writer.
	if st.AllWriters != nil {
		t.Errorf("a report keeps %d uncut writers; want none", len(st.AllWriters))
	}
	if all := ClassifyAllWriters(in.Scan, in.Table, in.Paths); len(all.All) != 500*19 || len(all.Writers) != maxWriters {
		t.Errorf("ClassifyAllWriters: %d kept, %d listed; want %d and %d", len(all.All), len(all.Writers), 500*19, maxWriters)
	}
	const want = "500 processes are writing to protected `/shared`"
	var warned bool
	for _, w := range st.Warnings {
		warned = warned || (w.Kind == "protected_write" && strings.Contains(w.Message, want))
	}
	if !warned {
		t.Errorf("warnings = %+v; want one saying %q", st.Warnings, want)
	}
	for _, tc := range []struct {
		name, text, want string
	}{
		{"writes", AnswerWrites("hs", st, Target{}).Text(), "500 processes are writing to /shared:"},
		{"writes /shared", AnswerWrites("hs", st, Target{Path: "/shared", Resolved: "/shared", Exists: true, Mount: "/shared", MountPoint: true}).Text(), "500 processes are writing to /shared,"},
		{"safe", AnswerSafe("hs", st, Target{}).Text(), "500 processes are writing to /shared now"},
		{"listed", AnswerWrites("hs", st, Target{}).Text(), "190 listed, 9,300 more left out of the report"},
	} {
		if !strings.Contains(tc.text, tc.want) {
			t.Errorf("%s: answer = %q; want %q", tc.name, tc.text, tc.want)
		}
	}
}
