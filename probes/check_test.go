package probes

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	_ "runwatch/internal/racequiet" // no second of sleep at the test binary's exit under -race
)

func TestCheckHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	ctx := context.Background()
	if a, err := CheckHTTP(ctx, srv.Client(), srv.URL+"/health"); err != nil || a.Code != 200 {
		t.Errorf("CheckHTTP(/health) = %+v, %v; want 200", a, err)
	}
	if a, err := CheckHTTP(ctx, srv.Client(), srv.URL+"/other"); err != nil || a.Code != 503 || a.Status != "503 Service Unavailable" {
		t.Errorf("CheckHTTP(/other) = %+v, %v; want 503", a, err)
	}
	if _, err := CheckHTTP(ctx, srv.Client(), "http://[::1"); !errors.Is(err, ErrBadRequest) {
		t.Errorf("CheckHTTP(malformed) = %v; want ErrBadRequest", err)
	}
	srv.Close()
	if _, err := CheckHTTP(ctx, http.DefaultClient, srv.URL+"/health"); err == nil || errors.Is(err, ErrBadRequest) {
		t.Errorf("CheckHTTP(closed server) = %v; want a connection error", err)
	}
}

func TestGuardDirSize(t *testing.T) {
	dir := t.TempDir()
	for name, n := range map[string]int{"a": 10, "b": 32} {
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	g := NewGuard()
	if size, files, err := g.DirSize(context.Background(), dir); err != nil || size != 42 || files != 2 {
		t.Errorf("DirSize = %d, %d, %v; want 42 bytes in 2 files (the subdirectory not counted)", size, files, err)
	}
	if _, _, err := g.DirSize(context.Background(), filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Errorf("DirSize(missing) = %v; want not exist", err)
	}
}
