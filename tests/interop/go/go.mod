module ctxstore.dev/interop

go 1.19
