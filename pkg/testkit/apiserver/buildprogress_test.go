package apiserver

import (
	"strings"
	"testing"
	"time"
)

// lines delivers each Write as one string, while there is room.
type lines chan string

func (l lines) Write(p []byte) (int, error) {
	select {
	case l <- string(p):
	default:
	}
	return len(p), nil
}

// TestBuildProgress feeds buildOutput what `go build -v` writes, in pieces
// that split lines, and checks the progress line and a failed build's output.
func TestBuildProgress(t *testing.T) {
	out := &buildOutput{}
	for _, piece := range []string{"k8s.io/api/co", "re/v1\nk8s.io/apiserver/pkg/server\n# k8s.io/kubernetes/cmd\n", "./x.go:3:2: undefined: y\n"} {
		if _, err := out.Write([]byte(piece)); err != nil {
			t.Fatal(err)
		}
	}
	got := make(lines, 1)
	stop := out.report(got, time.Now().Add(-90*time.Second), time.Millisecond)
	line := <-got
	stop()
	if !strings.Contains(line, "building: 1m30s, 2 packages compiled (last k8s.io/apiserver/pkg/server)") {
		t.Errorf("progress line %q", line)
	}
	if want := "# k8s.io/kubernetes/cmd\n./x.go:3:2: undefined: y\n"; out.output() != want {
		t.Errorf("output %q, want the compiler's lines only: %q", out.output(), want)
	}
	// Without a progress writer nothing runs.
	(&buildOutput{}).report(nil, time.Now(), time.Millisecond)()
}
