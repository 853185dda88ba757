package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
)

// Rows larger than the server accepts. The MySQL family refuses a packet
// larger than max_allowed_packet (16 MiB by default on MariaDB): a
// parameter sent in one piece, a parameter accumulated through
// COM_STMT_SEND_LONG_DATA, and a result row on its way back. How the
// client learns of it depends on what it knows of the limit: the driver's
// own limit (64 MiB by default) refuses before sending (ErrPktTooLarge);
// the server refuses a long parameter with an error (1105) or a packet
// with 1153 and closes the connection, usually while the client is still
// writing, so that the client sees only "connection reset" or "broken
// pipe", which reads as a write whose outcome is unknown. Run again, the
// same INSERT fails the same way every time: a resolution that re-runs it
// would never end. So a submit's row is measured against the server's
// limit before it is sent, and a row that cannot fit is refused at once
// (RowTooLargeError, a lasting refusal: the row was not written).

// PacketMargin is the room left in a packet for the rest of a task row (the
// names, the policy, error texts written later, each at most
// MaxErrorTextBytes) and the protocol's headers: a submit whose row's text
// and byte columns add up to more than the server's max_allowed_packet less
// PacketMargin is refused (64 KiB).
const PacketMargin = 64 << 10

// PacketLimiter is a Driver whose server refuses packets over a size.
type PacketLimiter interface {
	// PacketLimit reads the largest packet the server accepts (bytes).
	PacketLimit(ctx context.Context, db *sql.DB) (int64, error)
	// IsPacketTooLarge reports a refusal of a packet or a parameter over
	// that size, by the driver or by the server.
	IsPacketTooLarge(err error) bool
}

// RowTooLargeError is the refusal of a submit whose row does not fit in the
// server's packet limit: nothing was written. It is a lasting refusal.
type RowTooLargeError struct {
	Args  int64 // the call's arguments (task_parameter), bytes
	Size  int64 // the row's text and byte columns, bytes
	Limit int64 // the server's max_allowed_packet, bytes
	Cause error // the driver's or server's own refusal, if it gave one
}

func (e *RowTooLargeError) Error() string {
	msg := fmt.Sprintf("argo: the call's arguments are too large: %d bytes encoded (the task row %d bytes), more than the database server accepts in one packet (max_allowed_packet = %d bytes, of which argo keeps %d bytes for the rest of the row): pass a reference to the data (a key, a path, a URL) instead of the data itself, or raise max_allowed_packet on the server (on every node) to at least %d",
		e.Args, e.Size, e.Limit, PacketMargin, e.Size+PacketMargin)
	if e.Cause != nil {
		msg += " (the server: " + e.Cause.Error() + ")"
	}
	return msg
}

func (e *RowTooLargeError) Unwrap() error { return e.Cause }

// isRowTooLarge reports a RowTooLargeError in err's chain.
func isRowTooLarge(err error) bool {
	var tl *RowTooLargeError
	return errors.As(err, &tl)
}

// packetLimit caches the server's max_allowed_packet, as last read (0: not
// read yet). A row that fits it is sent without reading it again; a row
// that does not makes the Store read it again (it may have been raised),
// and so does a write that failed with its outcome unknown (it may have
// been lowered).
type packetLimit struct{ limit atomic.Int64 }

// RowSize is the sum of the lengths of t's text and byte columns: what a
// submit of t sends, less a few hundred bytes of numbers and headers.
func RowSize(t *Task) int64 {
	var n int64
	for _, a := range InsertArgs(t) {
		switch v := a.(type) {
		case string:
			n += int64(len(v))
		case []byte:
			n += int64(len(v))
		case sql.NullString:
			n += int64(len(v.String))
		}
	}
	return n
}

// readPacketLimit reads the server's packet limit again; 0 when the engine
// has none, or the last limit read when it cannot be read now (0 if none:
// the write then goes ahead and meets the server's own check).
func (s *Store) readPacketLimit(ctx context.Context) int64 {
	pl, ok := s.d.(PacketLimiter)
	if !ok {
		return 0
	}
	// A few tries: the server closes a connection it refused a packet on,
	// and the pool may hand that one out first ("invalid connection").
	var read int64
	var err error
	for try := 0; try < 3 && (try == 0 || err != nil) && ctx.Err() == nil; try++ {
		read, err = pl.PacketLimit(ctx, s.db.DB)
	}
	if err != nil || read <= 0 {
		return s.packet.limit.Load()
	}
	s.packet.limit.Store(read)
	return read
}

// CheckRowFits refuses (RowTooLargeError) a submit of t whose row cannot
// fit in the server's packet limit, before anything is sent. A row that
// fits the limit last read is let through without a round trip, unless
// fresh (after a write failed with its outcome unknown) asks to read it
// again.
func (s *Store) CheckRowFits(ctx context.Context, t *Task, fresh bool) error {
	if _, ok := s.d.(PacketLimiter); !ok {
		return nil
	}
	size := RowSize(t)
	if !fresh && size+PacketMargin <= s.packet.limit.Load() {
		return nil
	}
	if limit := s.readPacketLimit(ctx); limit > 0 && size+PacketMargin > limit {
		return &RowTooLargeError{Args: int64(len(t.Parameter)), Size: size, Limit: limit}
	}
	return nil
}

// tooLargeRefusal turns the driver's or server's refusal of a packet too
// large for t's row into a RowTooLargeError (nil if err is no such
// refusal).
func (s *Store) tooLargeRefusal(ctx context.Context, t *Task, err error) error {
	if isRowTooLarge(err) {
		return err
	}
	pl, ok := s.d.(PacketLimiter)
	if !ok || !pl.IsPacketTooLarge(err) {
		return nil
	}
	return &RowTooLargeError{Args: int64(len(t.Parameter)), Size: RowSize(t), Limit: s.readPacketLimit(ctx), Cause: err}
}

// SetPacketLimit replaces the packet limit last read (tests: a limit the
// server has lowered since it was read).
func (s *Store) SetPacketLimit(n int64) { s.packet.limit.Store(n) }
