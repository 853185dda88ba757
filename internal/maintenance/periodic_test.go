package maintenance

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// The runner asks may at Start and every tick, runs a pass only where may
// says yes, and at most once per every however often it asks.
func TestPeriodicPassesOnlyWhenItMayAndSpaced(t *testing.T) {
	var asked, passes atomic.Int32
	var may atomic.Bool
	p := newPeriodic("test", time.Millisecond, func() bool { asked.Add(1); return may.Load() },
		func(context.Context) { passes.Add(1) })
	p.every = time.Hour
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer p.Stop(context.Background())
	waitFor(t, 5*time.Second, "the runner to ask 5 times", func() bool { return asked.Load() >= 5 })
	if n := passes.Load(); n != 0 {
		t.Fatalf("%d passes while may said no", n)
	}
	may.Store(true)
	waitFor(t, 5*time.Second, "a pass once may says yes", func() bool { return passes.Load() >= 1 })
	seen := asked.Load()
	waitFor(t, 5*time.Second, "the runner to ask 20 times more", func() bool { return asked.Load() >= seen+20 })
	if n := passes.Load(); n != 1 {
		t.Fatalf("%d passes within every (1h) of the first, want 1", n)
	}
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkNoServiceGoroutines(t)
}

// Without every a pass runs at each tick where may says yes; Wake makes
// the runner ask at once, long before its tick.
func TestPeriodicWake(t *testing.T) {
	asked := make(chan struct{}, 1)
	var passes atomic.Int32
	p := newPeriodic("test", time.Hour, func() bool { asked <- struct{}{}; return true },
		func(context.Context) { passes.Add(1) })
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer p.Stop(context.Background())
	for i := range 3 {
		receive(t, asked, "the runner to ask (at Start, then at Wake)")
		waitFor(t, 5*time.Second, "the pass", func() bool { return passes.Load() == int32(i+1) })
		p.Wake()
	}
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkNoServiceGoroutines(t)
}
