package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
)

// The parent and a child talk in JSON lines: the parent writes a start line
// and then one reply per re-list request and per events step on the child's
// stdin; the child writes events, re-list requests, events-step requests and
// finally a result or an error on its stdout. Its stderr is free for logs
// (klog).

// EnvWatchListClient is client-go's environment switch for streaming lists. The
// gate is read once, when the first reflector is built, so it has to be in the
// child's environment from the start: the reason each mode gets a process.
const EnvWatchListClient = "KUBE_FEATURE_WatchListClient"

// startLine is the parent's first line.
type startLine struct {
	Mode      string        `json:"mode"`
	Resources []ResourceRef `json:"resources"`
	Config    ClientConfig  `json:"config"`
	Plan      Plan          `json:"plan"`
	// CPUProfile is a file for a CPU profile of the sync ("" for none).
	CPUProfile string `json:"cpuProfile,omitempty"`
	// AllocProfile is a file for an allocation profile of the sync ("" for
	// none).
	AllocProfile string `json:"allocProfile,omitempty"`
}

// parentLine is any line the parent writes.
type parentLine struct {
	Start  *startLine   `json:"start,omitempty"`
	Relist *relistReply `json:"relist,omitempty"`
	Events *eventsReply `json:"events,omitempty"`
}

// eventsAsk is a child's request for a step of the events phase (0: the
// writer's setup).
type eventsAsk struct {
	Step int `json:"step"`
}

// eventsReply answers an eventsAsk once the parent has written.
type eventsReply struct {
	Step   int          `json:"step"`
	Answer EventsAnswer `json:"answer"`
	Error  string       `json:"error,omitempty"`
}

// relistReply answers a child's re-list request once the watches are ended
// and the changes written.
type relistReply struct {
	Index int `json:"index"`
	RelistAnswer
	Error string `json:"error,omitempty"`
}

// childLine is any line a child writes.
type childLine struct {
	Event       *Event     `json:"event,omitempty"`
	RelistReady int        `json:"relistReady,omitempty"`
	EventsReady *eventsAsk `json:"eventsReady,omitempty"`
	Result      *Result    `json:"result,omitempty"`
	Error       string     `json:"error,omitempty"`
}

// ServeChild is the child's side: it reads the start line from in, measures the
// mode it names and writes the result to out. It is what `cachebench child`
// runs. The child ends when the parent closes its stdin.
func ServeChild(ctx context.Context, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	enc := json.NewEncoder(out)
	write := func(l childLine) error {
		mu.Lock()
		defer mu.Unlock()
		return enc.Encode(l)
	}

	dec := json.NewDecoder(in)
	var first parentLine
	if err := dec.Decode(&first); err != nil || first.Start == nil {
		return fmt.Errorf("read the start line from the parent: %w", errors.Join(err, errors.New("no start line")))
	}
	err := serveStart(ctx, *first.Start, dec, write)
	if err != nil {
		_ = write(childLine{Error: err.Error()})
	}
	return err
}

func serveStart(ctx context.Context, st startLine, dec *json.Decoder, write func(childLine) error) error {
	mode, ok := Lookup(st.Mode)
	if !ok {
		return fmt.Errorf("unknown mode %q", st.Mode)
	}
	if got, want := os.Getenv(EnvWatchListClient), strconv.FormatBool(mode.Streaming); got != want {
		return fmt.Errorf("mode %s needs %s=%s in the environment, found %q", mode.Name, EnvWatchListClient, want, got)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	replies := make(chan relistReply)
	eventReplies := make(chan eventsReply)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // runs before wg.Wait: the reader stops sending
	wg.Go(func() {
		// The parent's lines after the start are re-list replies; EOF means
		// the parent is gone, and the measurement stops.
		defer cancel()
		for {
			var l parentLine
			if err := dec.Decode(&l); err != nil {
				return
			}
			if l.Relist != nil {
				select {
				case replies <- *l.Relist:
				case <-ctx.Done():
					return
				}
			}
			if l.Events != nil {
				select {
				case eventReplies <- *l.Events:
				case <-ctx.Done():
					return
				}
			}
		}
	})

	relist := func(ctx context.Context, index int) (RelistAnswer, error) {
		if err := write(childLine{RelistReady: index}); err != nil {
			return RelistAnswer{}, err
		}
		select {
		case r := <-replies:
			if r.Index != index {
				return RelistAnswer{}, fmt.Errorf("parent answered re-list %d, expected %d", r.Index, index)
			}
			if r.Error != "" {
				return r.RelistAnswer, errors.New(r.Error)
			}
			return r.RelistAnswer, nil
		case <-ctx.Done():
			return RelistAnswer{}, ctx.Err()
		}
	}
	writeEvents := func(ctx context.Context, step int) (EventsAnswer, error) {
		if err := write(childLine{EventsReady: &eventsAsk{Step: step}}); err != nil {
			return EventsAnswer{}, err
		}
		select {
		case r := <-eventReplies:
			if r.Step != step {
				return EventsAnswer{}, fmt.Errorf("parent answered events step %d, expected %d", r.Step, step)
			}
			if r.Error != "" {
				return r.Answer, errors.New(r.Error)
			}
			return r.Answer, nil
		case <-ctx.Done():
			return EventsAnswer{}, ctx.Err()
		}
	}
	res, err := Measure(ctx, MeasureSpec{
		Mode:         mode,
		Config:       st.Config.restConfig(),
		Resources:    st.Resources,
		Plan:         st.Plan,
		Relist:       relist,
		Write:        writeEvents,
		CPUProfile:   st.CPUProfile,
		AllocProfile: st.AllocProfile,
		Events:       func(e Event) { _ = write(childLine{Event: &e}) },
	})
	if err != nil {
		return err
	}
	return write(childLine{Result: &res})
}
