package ondemand

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	pollEvery = 5 * time.Millisecond
	// waitFor bounds a wait on a condition: generous, as a loaded machine
	// (a make test beside a Kubernetes build) is slow; a passing run does
	// not wait it out.
	waitFor = 30 * time.Second
)

func metav1CreateOptions() metav1.CreateOptions { return metav1.CreateOptions{} }
