package profile_test

import (
	"bytes"
	"context"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/cachetune/cachetune/internal/leakcheck"
	cprofile "github.com/cachetune/cachetune/pkg/profile"
)

//go:noinline
func labelledWorker(ready chan<- struct{}, release <-chan struct{}) {
	close(ready)
	<-release
}

func TestDoLabelsGoroutinesStartedInside(t *testing.T) {
	leakcheck.Check(t)
	release := make(chan struct{})
	ready := make(chan struct{})
	var wg sync.WaitGroup
	cprofile.Do(t.Context(), "widgets", "widgets.example.com", func(ctx context.Context) {
		if v, _ := pprof.Label(ctx, cprofile.LabelInformer); v != "widgets" {
			t.Errorf("label %s in f's context = %q, want widgets", cprofile.LabelInformer, v)
		}
		// As an informer's Run would: a goroutine started inside Do.
		wg.Add(1)
		go func() { defer wg.Done(); labelledWorker(ready, release) }()
	})
	defer func() { close(release); wg.Wait() }()
	<-ready

	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 0); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range p.Sample {
		for _, loc := range s.Location {
			for _, l := range loc.Line {
				if strings.HasSuffix(l.Function.Name, ".labelledWorker") {
					found = true
					if got := s.Label[cprofile.LabelInformer]; len(got) != 1 || got[0] != "widgets" {
						t.Errorf("worker goroutine has informer label %v, want [widgets]", got)
					}
					if got := s.Label[cprofile.LabelResource]; len(got) != 1 || got[0] != "widgets.example.com" {
						t.Errorf("worker goroutine has resource label %v, want [widgets.example.com]", got)
					}
				}
			}
		}
	}
	if !found {
		t.Fatal("worker goroutine not in the goroutine profile")
	}
}
