package mysqldriver

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// Refusals of a packet larger than max_allowed_packet.
const (
	errNetPacketTooLarge = 1153 // ER_NET_PACKET_TOO_LARGE: a packet over the limit (the server closes the connection)
	errPacketOverflowed  = 1301 // ER_WARN_ALLOWED_PACKET_OVERFLOWED: a result over the limit
	errUnknown           = 1105 // ER_UNKNOWN_ERROR, which MariaDB gives a long-data parameter over the limit
)

// PacketLimit reads the largest packet the server accepts from argo's
// sessions: the lesser of the session's max_allowed_packet (fixed when the
// connection was opened) and the global one (what new connections get).
func (d *Driver) PacketLimit(ctx context.Context, db *sql.DB) (int64, error) {
	var limit int64
	err := db.QueryRowContext(ctx, "SELECT LEAST(@@session.max_allowed_packet, @@global.max_allowed_packet)").Scan(&limit)
	return limit, err
}

// IsPacketTooLarge reports a refusal of a packet or parameter larger than
// max_allowed_packet: by the driver before sending (ErrPktTooLarge, the
// DSN's maxAllowedPacket), or by the server (1153 for a packet, 1105 for a
// parameter sent as long data, 1301 for a result).
func (d *Driver) IsPacketTooLarge(err error) bool {
	if errors.Is(err, mysql.ErrPktTooLarge) {
		return true
	}
	me, ok := serverError(err)
	if !ok {
		return false
	}
	switch me.Number {
	case errNetPacketTooLarge, errPacketOverflowed:
		return true
	case errUnknown:
		return strings.Contains(me.Message, "max_allowed_packet")
	}
	return false
}
