package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckoutWith(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "a", "b")
	for _, d := range []string{filepath.Join(root, "nested"), deep} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "nested", "go.mod"), []byte("module example.com/nested\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(deep)
	if got, err := checkoutWith("nested"); err != nil || got != root {
		t.Errorf("checkoutWith from %s = %q, %v; want %s", deep, got, err, root)
	}
	if _, err := checkoutWith("other"); err == nil || !strings.Contains(err.Error(), "--controller-runtime-child") {
		t.Errorf("checkoutWith outside a checkout = %v, want an error naming --controller-runtime-child", err)
	}
}
