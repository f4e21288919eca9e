.PHONY: test bench
# make test: vet and run every test against real redis-servers (scripts/test).
test:
	./scripts/test

# make bench: leat against raw go-redis on the same server.
bench:
	go test -run XXX -bench . -benchtime 200000x ./stream
