package alertchannel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/argo-retry/argo/alertchannel"
	"github.com/argo-retry/argo/argotype"
)

// A webhook channel with its own template: three alerts of one task within
// the window are one message at once and one summary at Close (or when the
// window ends).
func ExampleNewWebhook() {
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body alertchannel.WebhookBody
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Printf("summary=%v count=%d text=%q tasks=%v\n", body.Summary, body.Count, body.Text, body.TaskIDs)
	}))
	defer receiver.Close()
	hook, err := alertchannel.NewWebhook(alertchannel.WebhookConfig{
		URL: receiver.URL,
		Options: alertchannel.Options{
			Template: "{{if .Summary}}{{.Count}} more{{else}}{{.TaskName}} #{{.TaskID}}: {{.LastError}}{{end}}",
			Window:   time.Minute,
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	for id := int64(1); id <= 3; id++ {
		hook.Send(ctx, argotype.AlertEvent{AlertEnv: argotype.AlertEnv{TaskName: "charge", TaskID: id, LastError: "503"}})
	}
	hook.Close(ctx)
	// Output:
	// summary=false count=1 text="charge #1: 503" tasks=[1]
	// summary=true count=2 text="2 more" tasks=[2 3]
}
