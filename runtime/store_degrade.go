package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// A finish refused by the database for its data (isDataError: a text too
// long for its column, a character the column's charset lacks, …) is a bug,
// not an outage: retrying it as is fails the same way, for ever, while the
// task stays running. argo sanitises every text it writes (error_text.go), so
// this happens only with a schema that differs from argo's (a column made
// smaller, a utf8mb3 charset) or a bug in argo. The store then logs the
// refusal at ERROR and writes the state change once more with its error texts
// replaced by a short ASCII message that points to the log, so the task still
// moves on. If that is refused too, the finish fails with errDataRefused,
// which callers do not retry: the lease expires and the task is rescued.

// errDataRefused is returned by a finish or rescue the database refused for
// its data even with its error texts replaced. Retrying it cannot succeed.
var errDataRefused = errors.New("argo: the database refused this write for its data, even with its error texts replaced (see the ERROR log)")

// refusedTextNote bounds the database error quoted in a replaced text, so
// that the whole replacement stays within 255 bytes (a VARCHAR(255) or
// TINYTEXT column takes it).
const refusedTextNote = 180

func (s *store) logger() *slog.Logger {
	if s.log != nil {
		return s.log
	}
	return slog.Default()
}

// finish applies f (see finishAsIs) and degrades around a refusal for its data.
func (s *store) finish(ctx context.Context, f finishing, now Millis) error {
	err := s.finishAsIs(ctx, f, now)
	if !isDataError(err) {
		return err
	}
	s.logRefused("finish", f, err)
	err = s.finishAsIs(ctx, f.withTextsReplaced(err), now)
	if isDataError(err) {
		s.logger().Error("argo: outcome refused by the database even with its error texts replaced; not retried: the lease will expire and the task be rescued", "task_id", f.id, "attempt", f.attempt, "to", f.to, "error", err)
		return fmt.Errorf("%w: task %d: %v", errDataRefused, f.id, err)
	}
	return err
}

// finishBatch applies fs (see finishBatchAsIs). A batch refused for the data
// of one of its finishes wrote nothing: each finish is then written on its
// own, each with its own degrade.
func (s *store) finishBatch(ctx context.Context, fs []finishing, now Millis) ([]error, error) {
	errs, err := s.finishBatchAsIs(ctx, fs, now)
	if !isDataError(err) {
		return errs, err
	}
	errs = make([]error, len(fs))
	for i, f := range fs {
		errs[i] = s.finish(ctx, f, now)
	}
	return errs, nil
}

// rescue applies a lease rescue (see rescueAsIs) and degrades around a
// refusal for its data.
func (s *store) rescue(ctx context.Context, f finishing, leaseUntil, now Millis) error {
	err := s.rescueAsIs(ctx, f, leaseUntil, now)
	if !isDataError(err) {
		return err
	}
	s.logRefused("lease rescue", f, err)
	err = s.rescueAsIs(ctx, f.withTextsReplaced(err), leaseUntil, now)
	if isDataError(err) {
		s.logger().Error("argo: lease rescue refused by the database even with its error texts replaced", "task_id", f.id, "attempt", f.attempt, "to", f.to, "error", err)
		return fmt.Errorf("%w: task %d: %v", errDataRefused, f.id, err)
	}
	return err
}

func (s *store) logRefused(what string, f finishing, err error) {
	s.logger().Error("argo: the database refused a "+what+" for its data (a bug: please report it); writing the state change again with its error texts replaced",
		"task_id", f.id, "attempt", f.attempt, "to", f.to, "error", err,
		"error_msg_bytes", textLen(f.errMsg), "fallback_error_bytes", textLen(f.fallbackErr), "history_error_bytes", historyErrLen(f.history))
}

func textLen(p *string) int {
	if p == nil {
		return 0
	}
	return len(*p)
}

func historyErrLen(a *Attempt) int {
	if a == nil {
		return 0
	}
	return len(a.Error)
}

// withTextsReplaced returns f with each non-empty error text replaced by
// refusedText(err); f itself (and its history row) is left unchanged.
func (f finishing) withTextsReplaced(err error) finishing {
	safe := refusedText(err)
	if f.errMsg != nil && *f.errMsg != "" {
		f.errMsg = &safe
	}
	if f.fallbackErr != nil && *f.fallbackErr != "" {
		f.fallbackErr = &safe
	}
	if f.history != nil && f.history.Error != "" {
		h := *f.history
		h.Error = safe
		f.history = &h
	}
	return f
}

// refusedText is the error text written in place of one the database
// refused: short and ASCII only, so that any text column of any charset
// takes it.
func refusedText(err error) string {
	note := strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, err.Error())
	if len(note) > refusedTextNote {
		note = note[:refusedTextNote] + "..."
	}
	return "argo: error text refused by the database (" + note + "); see the application log"
}
