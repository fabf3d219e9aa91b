module ctxstore.example/consult

go 1.19
