package main

import (
	"context"
	"errors"
)

func mainSuite(ctx context.Context, args []string) error { return errors.New("todo") }
