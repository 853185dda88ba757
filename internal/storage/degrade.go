package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// A finish refused by the database for its data (IsDataError: a text too
// long for its column, a character the column's charset lacks, …) is a bug,
// not an outage: retrying it as is fails the same way, for ever, while the
// task stays running. argo sanitises every text it writes (error_text.go), so
// this happens only with a schema that differs from argo's (a column made
// smaller, a utf8mb3 charset) or a bug in argo. The Store then logs the
// refusal at ERROR and writes the state change once more with its error texts
// replaced by a short ASCII message that points to the log, so the task still
// moves on. If that is refused too, the finish fails with ErrDataRefused,
// which callers do not retry: the lease expires and the task is rescued.

// ErrDataRefused is returned by a finish or rescue the database refused for
// its data even with its error texts replaced. Retrying it cannot succeed.
var ErrDataRefused = errors.New("argo: the database refused this write for its data, even with its error texts replaced (see the ERROR log)")

// refusedTextNote bounds the database error quoted in a replaced text, so
// that the whole replacement stays within 255 bytes (a VARCHAR(255) or
// TINYTEXT column takes it).
const refusedTextNote = 180

func (s *Store) logger() *slog.Logger {
	if s.log != nil {
		return s.log
	}
	return slog.Default()
}

// Finish applies f (see finishAsIs) and degrades around a refusal for its data.
func (s *Store) Finish(ctx context.Context, f Finishing, now Millis) error {
	err := s.FinishAsIs(ctx, f, now)
	if !s.d.IsDataError(err) {
		return err
	}
	s.logRefused("finish", f, err)
	err = s.FinishAsIs(ctx, f.withTextsReplaced(err), now)
	if s.d.IsDataError(err) {
		s.logger().Error("argo: outcome refused by the database even with its error texts replaced; not retried: the lease will expire and the task be rescued", "task_id", f.ID, "attempt", f.Attempt, "to", f.To, "error", err)
		return fmt.Errorf("%w: task %d: %v", ErrDataRefused, f.ID, err)
	}
	return err
}

// FinishBatch applies fs (see finishBatchAsIs). A batch refused for the data
// of one of its finishes wrote nothing: each finish is then written on its
// own, each with its own degrade.
func (s *Store) FinishBatch(ctx context.Context, fs []Finishing, now Millis) ([]error, error) {
	errs, err := s.FinishBatchAsIs(ctx, fs, now)
	if !s.d.IsDataError(err) {
		return errs, err
	}
	errs = make([]error, len(fs))
	for i, f := range fs {
		errs[i] = s.Finish(ctx, f, now)
	}
	return errs, nil
}

// Rescue applies a lease rescue (see rescueAsIs) and degrades around a
// refusal for its data.
func (s *Store) Rescue(ctx context.Context, f Finishing, leaseUntil, now Millis) error {
	err := s.RescueAsIs(ctx, f, leaseUntil, now)
	if !s.d.IsDataError(err) {
		return err
	}
	s.logRefused("lease rescue", f, err)
	err = s.RescueAsIs(ctx, f.withTextsReplaced(err), leaseUntil, now)
	if s.d.IsDataError(err) {
		s.logger().Error("argo: lease rescue refused by the database even with its error texts replaced", "task_id", f.ID, "attempt", f.Attempt, "to", f.To, "error", err)
		return fmt.Errorf("%w: task %d: %v", ErrDataRefused, f.ID, err)
	}
	return err
}

func (s *Store) logRefused(what string, f Finishing, err error) {
	s.logger().Error("argo: the database refused a "+what+" for its data (a bug: please report it); writing the state change again with its error texts replaced",
		"task_id", f.ID, "attempt", f.Attempt, "to", f.To, "error", err,
		"error_msg_bytes", textLen(f.ErrMsg), "fallback_error_bytes", textLen(f.FallbackErr), "history_error_bytes", historyErrLen(f.History))
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
// RefusedText(err); f itself (and its history row) is left unchanged.
func (f Finishing) withTextsReplaced(err error) Finishing {
	safe := RefusedText(err)
	if f.ErrMsg != nil && *f.ErrMsg != "" {
		f.ErrMsg = &safe
	}
	if f.FallbackErr != nil && *f.FallbackErr != "" {
		f.FallbackErr = &safe
	}
	if f.History != nil && f.History.Error != "" {
		h := *f.History
		h.Error = safe
		f.History = &h
	}
	return f
}

// RefusedText is the error text written in place of one the database
// refused: short and ASCII only, so that any text column of any charset
// takes it.
func RefusedText(err error) string {
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
