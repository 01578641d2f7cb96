package state

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	_ "runwatch/internal/racequiet" // no second of sleep at the test binary's exit under -race
)

func TestJournalAppendTornLineAndCompact(t *testing.T) {
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	j, err := d.OpenJournal("seen.log")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"a", "b"} {
		if _, err := j.Append(l); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := j.Append("c\nd"); err == nil {
		t.Error("Append(a line with a newline) = nil; want an error")
	}
	// A line torn by a crash: no newline at the end.
	f, _ := os.OpenFile(filepath.Join(d.Path(), "seen.log"), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("tor")
	f.Close()
	if got, err := j.Lines(); err != nil || !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("Lines() = %q, %v; want [a b] without the torn line", got, err)
	}
	if err := j.Compact([]string{"b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Append("e"); err != nil {
		t.Fatal(err)
	}
	j.Close()
	j2, _ := d.OpenJournal("seen.log")
	defer j2.Close()
	if got, err := j2.Lines(); err != nil || !reflect.DeepEqual(got, []string{"b", "e"}) {
		t.Errorf("Lines() after Compact and reopen = %q, %v; want [b e]", got, err)
	}
}
