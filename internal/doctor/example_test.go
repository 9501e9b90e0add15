package doctor_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/cachetune/cachetune/internal/cluster"
	"github.com/cachetune/cachetune/internal/doctor"
)

// Examine the Pods and ConfigMaps of one namespace, watch them for half a
// minute for reconcile loops, and print the report and what to change.
func ExampleRun() {
	ctx := context.Background()
	cfg, err := cluster.Load("", "") // $KUBECONFIG or ~/.kube/config
	if err != nil {
		fmt.Println(err)
		return
	}
	report, err := doctor.Run(ctx, cfg,
		doctor.WithResources("pods", "configmaps"), doctor.WithNamespace("shop"),
		doctor.WithWatch(30*time.Second), doctor.WithProgress(os.Stderr))
	if err != nil {
		fmt.Println(err) // an invalid option or an unreachable cluster; forbidden resources are in the report
		return
	}
	_ = doctor.WriteTable(os.Stdout, report)
	for _, rec := range report.Recommendations {
		fmt.Printf("%s, %s: %s\n  fix: %s\n", rec.Resource, rec.Symptom, rec.Cause, rec.Fix)
	}
}
