// Command alerts sends a failing task's alerts to a DingTalk group robot
// through a directive's alert-channel= key (docs/alerts.md).
//
//	ARGO_DINGTALK_WEBHOOK='https://…/robot/send?access_token=…' ARGO_DINGTALK_SECRET='SEC…' go run ./examples/alerts
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/argo-retry/argo/alertchannel"
	"github.com/argo-retry/argo/runtime"
)

func main() {
	webhook, secret := os.Getenv("ARGO_DINGTALK_WEBHOOK"), os.Getenv("ARGO_DINGTALK_SECRET")
	if webhook == "" {
		log.Fatal("set ARGO_DINGTALK_WEBHOOK to a DingTalk robot's webhook URL (and ARGO_DINGTALK_SECRET to its signing secret)")
	}
	dir, err := os.MkdirTemp("", "argo-alerts")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := run(context.Background(), filepath.Join(dir, "argo.db"), webhook, secret); err != nil {
		log.Fatal(err)
	}
}

// run charges an order whose every attempt fails, and waits until it is
// dead and its alerts are sent: the second attempt's at once, the third's
// in the summary that closing the channel sends.
func run(ctx context.Context, dbPath, webhook, secret string) error {
	ding, err := alertchannel.NewDingTalk(alertchannel.DingTalkConfig{WebhookURL: webhook, Secret: secret})
	if err != nil {
		return err
	}
	rt, err := runtime.Start(ctx, runtime.Config{
		DSN:           "sqlite:" + dbPath,
		AutoMigrate:   true,
		PollInterval:  50 * time.Millisecond,
		AlertChannels: map[string]runtime.AlertChannel{"ops": ding},
	})
	if err != nil {
		return err
	}
	if err := ArgoRegister(rt); err != nil {
		rt.Stop(ctx)
		return err
	}
	if err := ChargeCardDurable(ctx, "SO-1001"); err != nil {
		rt.Stop(ctx)
		return err
	}
	dead, err := waitDead(ctx, rt, 30*time.Second)
	// Stop runs the queued alerts; Close then sends the open windows' summaries.
	stopErr := rt.Stop(ctx)
	closeErr := ding.Close(ctx)
	if err := errors.Join(err, stopErr, closeErr); err != nil {
		return err
	}
	fmt.Printf("task %d is dead; its alerts went to DingTalk\n", dead)
	return nil
}

// waitDead waits for the dead task and returns its id.
func waitDead(ctx context.Context, rt *runtime.Runtime, within time.Duration) (int64, error) {
	deadline := time.Now().Add(within)
	for {
		tasks, err := rt.Inspector().List(ctx, runtime.Filter{States: []runtime.State{runtime.StateDead}})
		if err != nil {
			return 0, err
		}
		if len(tasks) > 0 {
			return tasks[0].ID, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("the task is not dead after %s", within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
