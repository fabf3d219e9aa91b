module ctxstore.dev/client

go 1.19
