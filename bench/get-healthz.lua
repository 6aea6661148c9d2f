-- An operation that reads no body and asks nothing of the database: the HTTP stack's floor.
wrk.method = "GET"
