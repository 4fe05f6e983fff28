package ondemand

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	pollEvery = 5 * time.Millisecond
	waitFor   = 10 * time.Second
)

func metav1CreateOptions() metav1.CreateOptions { return metav1.CreateOptions{} }
