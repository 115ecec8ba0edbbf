module github.com/goxpdl/goxpdl

go 1.26.8

require (
	github.com/beevik/etree v1.8.1
	golang.org/x/net v0.62.0
)

require golang.org/x/text v0.43.0 // indirect
