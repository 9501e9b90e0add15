package bench

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestServerGOGCStaysWithTheServer checks that the local server's GOGC
// (--apiserver-gogc) reaches the server's options and no child's environment:
// a child that inherited it would run leanstore without its heap bound, which
// yields to a GOGC the process's owner set.
func TestServerGOGCStaysWithTheServer(t *testing.T) {
	o := RunOptions{ServerGOGC: "137", GOMEMLIMIT: "4GiB"}
	if got := o.serverOptions(nil).GOGC; got != "137" {
		t.Errorf("server options GOGC = %q, want 137", got)
	}
	cmd := exec.Command(os.Args[0], "child")
	stdin, stdout, err := prepareChild(cmd, ChildSpec{Command: cmd, Env: o.childEnv()})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = stdin.Close(), stdout.Close()
	var gogc []string
	for _, kv := range cmd.Env {
		if v, ok := strings.CutPrefix(kv, "GOGC="); ok {
			gogc = append(gogc, v)
		}
	}
	// The child's GOGC is this process's, if any: exec uses the last value.
	want := []string{}
	if v, ok := os.LookupEnv("GOGC"); ok {
		want = append(want, v)
	}
	if !slices.Equal(gogc, want) {
		t.Errorf("child's GOGC values = %q, want %q (inherited only)", gogc, want)
	}
	if !slices.Contains(cmd.Env, "GOMEMLIMIT=4GiB") {
		t.Errorf("child's environment lacks --gomemlimit: %q", cmd.Env)
	}

	// --gogc, which is the children's, reaches them and wins over an
	// inherited GOGC (exec uses the last value of a name).
	o.GOGC = "50"
	cmd = exec.Command(os.Args[0], "child")
	stdin, stdout, err = prepareChild(cmd, ChildSpec{Command: cmd, Env: o.childEnv()})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = stdin.Close(), stdout.Close()
	last := ""
	for _, kv := range cmd.Env {
		if v, ok := strings.CutPrefix(kv, "GOGC="); ok {
			last = v
		}
	}
	if last != "50" {
		t.Errorf("child's GOGC = %q, want 50 from --gogc", last)
	}
}
