package runtime

import (
	"strings"
	"testing"
)

// TestMultiWriterParam: argoMultiWriter is argo's, not a session variable
// for the server: true and false are taken out of the DSN; another value is
// refused with what to write.
func TestMultiWriterParam(t *testing.T) {
	for _, v := range []string{"true", "false", "1"} {
		db, _, err := OpenDB("mysql:u:pw@tcp(127.0.0.1:1,127.0.0.1:2)/db?argoMultiWriter=" + v)
		if err != nil {
			t.Errorf("argoMultiWriter=%s: %v", v, err)
			continue
		}
		if h := mysqlHandleOf(db); h == nil || h.cfg.Params[multiWriterParam] != "" || h.failoverOpts.MultiWriter != (v != "false") {
			t.Errorf("argoMultiWriter=%s: handle %+v", v, h)
		}
		db.Close()
	}
	_, _, err := OpenDB("mysql:u:pw@tcp(127.0.0.1:1,127.0.0.1:2)/db?argoMultiWriter=maybe")
	if err == nil || !strings.Contains(err.Error(), `argoMultiWriter="maybe" is not true or false`) || strings.Contains(err.Error(), "pw@") {
		t.Errorf("argoMultiWriter=maybe: %v, want a refusal saying what to write, without the password", err)
	}
}
