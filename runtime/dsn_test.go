package runtime

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
	"github.com/go-sql-driver/mysql"
)

// gbkInjection ends a string literal when interpolated into a GBK
// connection: the driver escapes the quote as 0xbf 0x5c 0x27, which the
// server reads as one GBK character and a closing quote.
const gbkInjection = "\xbf\x27; CREATE TABLE argo_pwned (x INT); -- "

// withDSNParam appends a parameter to a mysql: DSN.
func withDSNParam(dsn, param string) string {
	if strings.Contains(dsn[strings.LastIndex(dsn, "/"):], "?") {
		return dsn + "&" + param
	}
	return dsn + "?" + param
}

// pwned reports whether the injected CREATE TABLE ran in db's database.
func pwned(t *testing.T, db *sql.DB) bool {
	t.Helper()
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'argo_pwned'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// A runtime on a GBK connection never lets an argument run as SQL: not an
// attempt's error text (every finish path: failure with history, retry,
// success), not the arguments, not the unique key. The server may refuse
// such bytes as data (1366, invalid GBK), which is loud and harmless; it
// must never see them as SQL (no table, no syntax error 1064).
func TestGBKCharsetRunsNoArgumentAsSQL(t *testing.T) {
	dsn := testdb.MySQLDSN(t)
	admin, _, err := OpenDB(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var hasGBK int
	if err := admin.QueryRow("SELECT COUNT(*) FROM information_schema.character_sets WHERE character_set_name = 'gbk'").Scan(&hasGBK); err != nil || hasGBK != 1 {
		t.Fatalf("the server has no gbk charset (%d, %v): this test needs it", hasGBK, err)
	}

	logs := &syncBuffer{}
	cfg := testConfig(withDSNParam(dsn, "charset=gbk"))
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rt := startRuntime(t, cfg)
	if rt.store.OnetripInUse() {
		t.Error("a multi-statement pool was opened on a gbk connection")
	}
	if h := mysqlHandleOf(rt.store.DB()); h == nil || h.cfg.InterpolateParams {
		t.Error("arguments are interpolated client-side on a gbk connection")
	}
	noteClientSide(cfg.Logger, rt.store.DB()) // a second runtime on the handle, say
	if n := strings.Count(logs.String(), "level=INFO msg=\"argo: MySQL arguments sent as server-side prepared statements"); n != 1 {
		t.Errorf("%d INFO logs saying why arguments are not interpolated, want 1; log:\n%s", n, logs.String())
	}
	// refusedAsData reports whether err is the server refusing bytes as
	// data, and fails the test if it parsed them as SQL.
	refusedAsData := func(t *testing.T, what string, err error) bool {
		t.Helper()
		switch {
		case err == nil:
			return false
		case strings.Contains(err.Error(), "1064"):
			t.Errorf("%s: the server parsed an argument as SQL: %v", what, err)
		case !strings.Contains(err.Error(), "1366"):
			t.Errorf("%s: %v, want nil or a 1366 refusal", what, err)
		default:
			t.Logf("%s refused as data: %v", what, err)
		}
		return true
	}

	// Each case starts without the table (a failing case leaves it).
	noTable := func(t *testing.T) {
		t.Helper()
		if _, err := admin.Exec("DROP TABLE IF EXISTS argo_pwned"); err != nil {
			t.Fatal(err)
		}
	}

	// An attempt's error text reaches the database in its outcome write:
	// a lone failure (task row and history row) and a batch of finishes,
	// the writes that take argo's multi-statement pool where it has one.
	// They are driven here directly on a row leased as a claim leaves it,
	// so that each write's own error is seen (nil, or the server refusing
	// the bytes as data), whatever the runtime then does with it.
	t.Run("error text", func(t *testing.T) {
		noTable(t)
		def := &TaskDef{Name: "gbk.errtext", Mode: Scheduled, Delay: time.Hour}
		// The second text is shaped for the history row's INSERT … SELECT,
		// where the quoted text is followed by one more value.
		for _, text := range []string{"peer said " + gbkInjection, "peer said \xbf', 0 FROM DUAL; CREATE TABLE argo_pwned (x INT); -- "} {
			leased := func() finishing {
				t.Helper()
				id, err := rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`)})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := admin.Exec("UPDATE argo_task SET task_status = ?, execute_times = 1, lease_owner = 'gbk-test', lease_until = ? WHERE id = ?",
					StateRunning, toMillis(time.Now().Add(time.Hour)), id); err != nil {
					t.Fatal(err)
				}
				task, err := rt.Inspector().Get(context.Background(), id)
				if err != nil {
					t.Fatal(err)
				}
				return finishing{Fence: fence{ID: id, Shard: task.ShardKey, Owner: "gbk-test", Attempt: 1, From: StateRunning}, To: StateRetrying, Due: toMillis(time.Now()), ErrMsg: &text}
			}
			failure := func() finishing {
				f := leased()
				now := toMillis(time.Now())
				f.History = &Attempt{TaskPK: f.ID, Attempt: 1, Kind: "attempt", Worker: "gbk-test", StartedAt: now, FinishedAt: now, Outcome: OutcomeFailed, Error: text}
				return f
			}
			err := rt.store.Finish(context.Background(), failure(), toMillis(time.Now()))
			if pwned(t, admin) {
				t.Fatalf("error text %q ran as SQL (lone failure): table argo_pwned exists", text)
			}
			refusedAsData(t, "lone failure", err)
			// A batch: a failure with its history row, and a finish whose
			// error text goes only on the task row (its UPDATE).
			errs, err := rt.store.FinishBatch(context.Background(), []finishing{failure(), leased()}, toMillis(time.Now()))
			if pwned(t, admin) {
				t.Fatalf("error text %q ran as SQL (batch): table argo_pwned exists", text)
			}
			if !refusedAsData(t, "batch", err) {
				for i, e := range errs {
					if e != nil {
						t.Fatalf("batch finish %d: %v", i, e)
					}
				}
			}
		}
	})

	t.Run("arguments", func(t *testing.T) {
		noTable(t)
		args := []byte(`{"s":"` + gbkInjection + `"}`)
		runs := make(chan []byte, 4)
		var n atomic.Int32
		def := &TaskDef{Name: "gbk.args", Policy: fastPolicy(5), Run: func(ctx context.Context, a []byte) error {
			runs <- a
			if n.Add(1) == 1 {
				return errors.New("peer down")
			}
			return nil
		}}
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		id, err := rt.Submit(context.Background(), Call{Task: def, Args: args})
		if pwned(t, admin) {
			t.Fatal("arguments ran as SQL: table argo_pwned exists")
		}
		if refusedAsData(t, "submit", err) {
			return
		}
		waitState(t, rt, id, StateSucceeded, 10*time.Second)
		if got := <-runs; !bytes.Equal(got, args) {
			t.Fatalf("arguments arrived as %q, want %q", got, args)
		}
		if pwned(t, admin) {
			t.Fatal("arguments ran as SQL: table argo_pwned exists")
		}
	})

	t.Run("unique key", func(t *testing.T) {
		noTable(t)
		var n atomic.Int32
		def := &TaskDef{Name: "gbk.unique", Policy: fastPolicy(5), Run: func(ctx context.Context, a []byte) error {
			if n.Add(1) == 1 {
				return errors.New("peer down")
			}
			return nil
		}}
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		key := "order-" + gbkInjection
		id, err := rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`), UniqueKey: key})
		if pwned(t, admin) {
			t.Fatal("a unique key ran as SQL: table argo_pwned exists")
		}
		if refusedAsData(t, "submit", err) {
			return
		}
		task := waitState(t, rt, id, StateSucceeded, 10*time.Second)
		if task.UniqueKey.String != key {
			t.Fatalf("unique key stored as %q, want %q", task.UniqueKey.String, key)
		}
		if pwned(t, admin) {
			t.Fatal("a unique key ran as SQL: table argo_pwned exists")
		}
	})

	// A control: plain text on the same gbk connection goes through every
	// write path (insert, failure with history, retry, success).
	t.Run("plain text works", func(t *testing.T) {
		var n atomic.Int32
		def := &TaskDef{Name: "gbk.plain", Policy: fastPolicy(5), Run: func(ctx context.Context, a []byte) error {
			if n.Add(1) == 1 {
				return errors.New("peer down")
			}
			return nil
		}}
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		id, err := rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{"n":1}`), UniqueKey: "plain-1"})
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, rt, id, StateSucceeded, 10*time.Second)
		atts, err := rt.Inspector().Attempts(context.Background(), id)
		if err != nil || len(atts) != 2 || atts[0].Error != "peer down" {
			t.Fatalf("history %+v, %v: want a failure 'peer down' then a success", atts, err)
		}
	})
}

// On a safe charset argo keeps client-side interpolation and its
// multi-statement pool.
func TestSafeCharsetKeepsClientSideInterpolation(t *testing.T) {
	dsn := testdb.MySQLDSN(t)
	for _, param := range []string{"", "charset=utf8mb4", "charset=utf8mb4,utf8", "charset=latin1&collation=latin1_swedish_ci"} {
		d := dsn
		if param != "" {
			d = withDSNParam(dsn, param)
		}
		db, _, err := OpenDB(d)
		if err != nil {
			t.Fatalf("%s: %v", param, err)
		}
		if h := mysqlHandleOf(db); h == nil || !h.cfg.InterpolateParams || h.unsafeCharset != "" {
			t.Errorf("%q: not interpolated client-side", param)
		}
		s := newStore(db, DialectMySQL)
		if !s.OnetripInUse() {
			t.Errorf("%q: no multi-statement pool", param)
		}
		s.Close()
		db.Close()
	}
}

// A DSN that asks for interpolation or multi-statements with an unsafe
// charset is refused, saying what to do.
func TestUnsafeCharsetRefusesInterpolationOptions(t *testing.T) {
	base := "mysql:u:pw@tcp(127.0.0.1:1)/db?"
	for _, q := range []string{
		"charset=gbk&interpolateParams=true",
		"charset=gbk&multiStatements=true",
		"charset=utf8mb4,gbk&multiStatements=true",
		"collation=big5_chinese_ci&multiStatements=true",
	} {
		_, _, err := OpenDB(base + q)
		if err == nil || !strings.Contains(err.Error(), "remove them, or use charset=utf8mb4") {
			t.Errorf("OpenDB(%s) = %v, want a refusal", q, err)
		}
	}
	for _, q := range []string{"charset=utf8mb4&multiStatements=true&interpolateParams=true", "charset=gbk"} {
		db, _, err := OpenDB(base + q)
		if err != nil {
			t.Errorf("OpenDB(%s): %v", q, err)
			continue
		}
		db.Close()
	}
}

func TestUnsafeConnectionCharset(t *testing.T) {
	for _, c := range []struct {
		params string
		unsafe bool
	}{
		{"", false},
		{"charset=utf8mb4", false},
		{"charset=UTF8MB4", false},
		{"charset=utf8,utf8mb3,latin1,ascii,binary", false},
		{"charset=gbk", true},
		{"charset=GBK", true},
		{"charset='gbk'", true},
		{"charset=utf8mb4,gbk", true}, // tried in order: gbk where utf8mb4 is refused
		{"charset=gbk,utf8mb4", true},
		{"charset=gbk&charset=utf8mb4", false}, // the driver keeps the last
		{"charset=utf8mb4&charset=big5", true},
		{"charset=sjis", true},
		{"charset=cp932", true},
		{"charset=gb18030", true},
		{"charset=ucs2", true}, // not in the list: not judged safe
		{"collation=gbk_chinese_ci", true},
		{"collation=utf8mb4_unicode_ci", false},
		{"collation=binary", false},
		{"charset=utf8mb4&collation=gbk_bin", true},
		{"character_set_client=gbk", true},
		{"character_set_client=utf8mb4", false},
		{"CHARACTER_SET_CLIENT=big5", true},
		{"autocommit=1%2Ccharacter_set_client%3Dgbk", true},
		{"autocommit=1%2C%20NAMES%20gbk", true},
		{"autocommit=1%2CCHARACTER%20SET%20gbk", true},
		{"lc_time_names=en_US", false},
		{"sql_mode=%27STRICT_TRANS_TABLES%2CNO_ZERO_DATE%27", false},
	} {
		mc, err := mysql.ParseDSN("u:p@tcp(h:1)/db?" + c.params)
		if err != nil {
			t.Fatalf("%s: %v", c.params, err)
		}
		why := unsafeConnectionCharset(mc, c.params)
		if (why != "") != c.unsafe {
			t.Errorf("%q: unsafe = %q, want unsafe %v", c.params, why, c.unsafe)
		}
	}
}

// A server that imposes a client charset of its own (here init_connect,
// which runs for users without SUPER) does not get it on argo's connections:
// OpenDB pins the charset with SET NAMES, so interpolation stays safe.
func TestServerImposedCharsetIsOverridden(t *testing.T) {
	srv := testdb.NewMySQLServer(t)
	rootDSN := srv.DSN(t)
	root, _, err := OpenDB(rootDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	mc, err := mysql.ParseDSN(strings.TrimPrefix(rootDSN, "mysql:"))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE USER 'argo_app'@'%' IDENTIFIED BY 'app'",
		"GRANT ALL ON `" + mc.DBName + "`.* TO 'argo_app'@'%'",
		"SET GLOBAL init_connect = 'SET NAMES gbk'",
	} {
		if _, err := root.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	mc.User, mc.Passwd = "argo_app", "app"
	dsn := "mysql:" + mc.FormatDSN()

	// What the server imposes on a connection that does not pin its charset.
	plain, err := sql.Open("mysql", mc.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	var imposed string
	if err := plain.QueryRow("SELECT @@character_set_client").Scan(&imposed); err != nil || imposed != "gbk" {
		t.Fatalf("the server imposes %q (%v), want gbk: the test's premise does not hold", imposed, err)
	}

	rt := startRuntime(t, testConfig(dsn))
	var got string
	if err := dbx(rt.store).QueryRow("SELECT @@character_set_client").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != "utf8mb4" {
		t.Errorf("argo's connections have character_set_client %s, want utf8mb4", got)
	}
	def := &TaskDef{Name: "imposed", Mode: Scheduled, Delay: time.Hour}
	id, err := rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := root.Exec("UPDATE argo_task SET task_status = ?, execute_times = 1, lease_owner = 'gbk-test', lease_until = ? WHERE id = ?",
		StateRunning, toMillis(time.Now().Add(time.Hour)), id); err != nil {
		t.Fatal(err)
	}
	task, err := rt.Inspector().Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	text := "peer said \xbf', 0 FROM DUAL; CREATE TABLE argo_pwned (x INT); -- "
	now := toMillis(time.Now())
	err = rt.store.Finish(context.Background(), finishing{
		Fence: fence{ID: id, Shard: task.ShardKey, Owner: "gbk-test", Attempt: 1, From: StateRunning}, To: StateRetrying, Due: now, ErrMsg: &text,
		History: &Attempt{TaskPK: id, Attempt: 1, Kind: "attempt", Worker: "gbk-test", StartedAt: now, FinishedAt: now, Outcome: OutcomeFailed, Error: text},
	}, now)
	t.Logf("outcome write: %v", err)
	if pwned(t, root) {
		t.Fatal("an error text ran as SQL on a connection the server made gbk: table argo_pwned exists")
	}
}
