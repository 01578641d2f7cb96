package handlers

import (
	"log/slog"
	"strings"
)

// slogWriter turns a library's log.Logger output into debug lines of a (redacting) slog logger.
type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.l.Debug(strings.TrimSpace(string(p)))
	return len(p), nil
}
