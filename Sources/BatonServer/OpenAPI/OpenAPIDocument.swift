/// The OpenAPI 3.1 description of the control plane, served at `/openapi.json`. Tests hold the
/// server to it: every route, method and role, and every response they see, is checked against it.
enum OpenAPIDocument {
    static let json = #"""
        {
          "openapi": "3.1.0",
          "info": {
            "title": "Baton control plane",
            "version": "1",
            "description": "Enqueue, inspect and steer Baton jobs. Errors are application/problem+json (RFC 9457). Authenticate with `Authorization: Bearer <token>`; each operation's `x-baton-roles` lists the token roles allowed (admin, enqueue, read)."
          },
          "servers": [
            {
              "url": "http://127.0.0.1:8080"
            }
          ],
          "security": [
            {
              "bearer": []
            }
          ],
          "paths": {
            "/v1/jobs": {
              "post": {
                "operationId": "enqueueJob",
                "summary": "Enqueue a chain",
                "x-baton-roles": [
                  "admin",
                  "enqueue"
                ],
                "responses": {
                  "201": {
                    "description": "Enqueued; with `?wait=`, as it is when it finished or the time ran out.",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/Job"
                        }
                      }
                    },
                    "headers": {
                      "Location": {
                        "description": "The job's URL.",
                        "schema": {
                          "type": "string"
                        }
                      }
                    },
                    "links": {
                      "GetJob": {
                        "operationId": "getJob",
                        "parameters": {
                          "id": "$response.body#/id"
                        }
                      },
                      "CancelJob": {
                        "operationId": "cancelJob",
                        "parameters": {
                          "id": "$response.body#/id"
                        }
                      },
                      "RetryJob": {
                        "operationId": "retryJob",
                        "parameters": {
                          "id": "$response.body#/id"
                        }
                      },
                      "DeleteJob": {
                        "operationId": "deleteJob",
                        "parameters": {
                          "id": "$response.body#/id"
                        }
                      }
                    }
                  },
                  "200": {
                    "description": "The idempotency key names an existing job: that job.",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/Job"
                        }
                      }
                    },
                    "headers": {
                      "Location": {
                        "description": "The job's URL.",
                        "schema": {
                          "type": "string"
                        }
                      }
                    },
                    "links": {
                      "GetJob": {
                        "operationId": "getJob",
                        "parameters": {
                          "id": "$response.body#/id"
                        }
                      },
                      "CancelJob": {
                        "operationId": "cancelJob",
                        "parameters": {
                          "id": "$response.body#/id"
                        }
                      },
                      "RetryJob": {
                        "operationId": "retryJob",
                        "parameters": {
                          "id": "$response.body#/id"
                        }
                      },
                      "DeleteJob": {
                        "operationId": "deleteJob",
                        "parameters": {
                          "id": "$response.body#/id"
                        }
                      }
                    }
                  },
                  "400": {
                    "$ref": "#/components/responses/BadRequest"
                  },
                  "401": {
                    "$ref": "#/components/responses/Unauthorized"
                  },
                  "403": {
                    "$ref": "#/components/responses/Forbidden"
                  },
                  "404": {
                    "description": "The job an idempotency key named was deleted meanwhile: send again.",
                    "content": {
                      "application/problem+json": {
                        "schema": {
                          "$ref": "#/components/schemas/Problem"
                        }
                      }
                    }
                  },
                  "409": {
                    "description": "The idempotency key names another caller's job.",
                    "content": {
                      "application/problem+json": {
                        "schema": {
                          "$ref": "#/components/schemas/Problem"
                        }
                      }
                    }
                  },
                  "413": {
                    "$ref": "#/components/responses/TooLarge"
                  },
                  "422": {
                    "$ref": "#/components/responses/UnknownTask"
                  },
                  "503": {
                    "$ref": "#/components/responses/Unavailable"
                  }
                },
                "parameters": [
                  {
                    "$ref": "#/components/parameters/Unchecked"
                  },
                  {
                    "$ref": "#/components/parameters/Wait"
                  },
                  {
                    "$ref": "#/components/parameters/IdempotencyKey"
                  }
                ],
                "requestBody": {
                  "required": true,
                  "content": {
                    "application/json": {
                      "schema": {
                        "$ref": "#/components/schemas/JobRequest"
                      }
                    }
                  }
                }
              },
              "get": {
                "operationId": "listJobs",
                "summary": "List jobs, newest first",
                "x-baton-roles": [
                  "admin",
                  "read"
                ],
                "responses": {
                  "200": {
                    "description": "A page of jobs (group members are shown in their parent).",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/JobPage"
                        }
                      }
                    }
                  },
                  "400": {
                    "$ref": "#/components/responses/BadRequest"
                  },
                  "401": {
                    "$ref": "#/components/responses/Unauthorized"
                  },
                  "403": {
                    "$ref": "#/components/responses/Forbidden"
                  },
                  "503": {
                    "$ref": "#/components/responses/Unavailable"
                  }
                },
                "parameters": [
                  {
                    "name": "state",
                    "in": "query",
                    "required": false,
                    "description": "One state or several, comma-separated.",
                    "schema": {
                      "type": "string",
                      "pattern": "^(scheduled|available|running|retryable|waiting|completed|discarded|cancelled)(,(scheduled|available|running|retryable|waiting|completed|discarded|cancelled))*$"
                    }
                  },
                  {
                    "name": "queue",
                    "in": "query",
                    "required": false,
                    "schema": {
                      "type": "string"
                    }
                  },
                  {
                    "name": "lane",
                    "in": "query",
                    "required": false,
                    "description": "The lane of the job's current stage.",
                    "schema": {
                      "type": "string"
                    }
                  },
                  {
                    "name": "task",
                    "in": "query",
                    "required": false,
                    "description": "Jobs with a stage (or group member) running this task.",
                    "schema": {
                      "type": "string"
                    }
                  },
                  {
                    "$ref": "#/components/parameters/Limit"
                  },
                  {
                    "$ref": "#/components/parameters/Cursor"
                  }
                ]
              }
            },
            "/v1/jobs/batch": {
              "post": {
                "operationId": "enqueueJobs",
                "summary": "Enqueue many chains in one transaction: all or none",
                "x-baton-roles": [
                  "admin",
                  "enqueue"
                ],
                "responses": {
                  "201": {
                    "description": "Enqueued (at least one new job).",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/BatchResponse"
                        }
                      }
                    }
                  },
                  "200": {
                    "description": "Every job was already there (idempotency keys).",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/BatchResponse"
                        }
                      }
                    }
                  },
                  "400": {
                    "$ref": "#/components/responses/BadRequest"
                  },
                  "401": {
                    "$ref": "#/components/responses/Unauthorized"
                  },
                  "403": {
                    "$ref": "#/components/responses/Forbidden"
                  },
                  "409": {
                    "description": "An idempotency key names another caller's job; nothing was enqueued.",
                    "content": {
                      "application/problem+json": {
                        "schema": {
                          "$ref": "#/components/schemas/Problem"
                        }
                      }
                    }
                  },
                  "413": {
                    "$ref": "#/components/responses/TooLarge"
                  },
                  "422": {
                    "$ref": "#/components/responses/UnknownTask"
                  },
                  "503": {
                    "$ref": "#/components/responses/Unavailable"
                  }
                },
                "parameters": [
                  {
                    "$ref": "#/components/parameters/Unchecked"
                  }
                ],
                "requestBody": {
                  "required": true,
                  "content": {
                    "application/json": {
                      "schema": {
                        "$ref": "#/components/schemas/BatchRequest"
                      }
                    }
                  }
                }
              }
            },
            "/v1/jobs/{id}": {
              "get": {
                "operationId": "getJob",
                "summary": "A job with every stage",
                "x-baton-roles": [
                  "admin",
                  "read",
                  "enqueue"
                ],
                "responses": {
                  "200": {
                    "description": "The job.",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/Job"
                        }
                      }
                    }
                  },
                  "400": {
                    "$ref": "#/components/responses/BadRequest"
                  },
                  "401": {
                    "$ref": "#/components/responses/Unauthorized"
                  },
                  "404": {
                    "$ref": "#/components/responses/NotFound"
                  },
                  "503": {
                    "$ref": "#/components/responses/Unavailable"
                  }
                },
                "parameters": [
                  {
                    "$ref": "#/components/parameters/JobID"
                  },
                  {
                    "$ref": "#/components/parameters/Wait"
                  }
                ]
              },
              "delete": {
                "operationId": "deleteJob",
                "summary": "Delete a finished job",
                "x-baton-roles": [
                  "admin"
                ],
                "responses": {
                  "204": {
                    "description": "Deleted."
                  },
                  "401": {
                    "$ref": "#/components/responses/Unauthorized"
                  },
                  "403": {
                    "$ref": "#/components/responses/Forbidden"
                  },
                  "404": {
                    "$ref": "#/components/responses/NotFound"
                  },
                  "409": {
                    "$ref": "#/components/responses/Conflict"
                  },
                  "503": {
                    "$ref": "#/components/responses/Unavailable"
                  }
                },
                "parameters": [
                  {
                    "$ref": "#/components/parameters/JobID"
                  }
                ]
              }
            },
            "/v1/jobs/{id}/cancel": {
              "post": {
                "operationId": "cancelJob",
                "summary": "Cancel a job that has not finished; a running stage is stopped",
                "x-baton-roles": [
                  "admin"
                ],
                "responses": {
                  "200": {
                    "description": "The job.",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/Job"
                        }
                      }
                    }
                  },
                  "401": {
                    "$ref": "#/components/responses/Unauthorized"
                  },
                  "403": {
                    "$ref": "#/components/responses/Forbidden"
                  },
                  "404": {
                    "$ref": "#/components/responses/NotFound"
                  },
                  "409": {
                    "$ref": "#/components/responses/Conflict"
                  },
                  "503": {
                    "$ref": "#/components/responses/Unavailable"
                  }
                },
                "parameters": [
                  {
                    "$ref": "#/components/parameters/JobID"
                  }
                ]
              }
            },
            "/v1/jobs/{id}/retry": {
              "post": {
                "operationId": "retryJob",
                "summary": "Start a discarded or cancelled job again at its failed stage, with fresh attempts",
                "x-baton-roles": [
                  "admin"
                ],
                "responses": {
                  "200": {
                    "description": "The job.",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/Job"
                        }
                      }
                    }
                  },
                  "401": {
                    "$ref": "#/components/responses/Unauthorized"
                  },
                  "403": {
                    "$ref": "#/components/responses/Forbidden"
                  },
                  "404": {
                    "$ref": "#/components/responses/NotFound"
                  },
                  "409": {
                    "$ref": "#/components/responses/Conflict"
                  },
                  "503": {
                    "$ref": "#/components/responses/Unavailable"
                  }
                },
                "parameters": [
                  {
                    "$ref": "#/components/parameters/JobID"
                  }
                ]
              }
            },
            "/v1/queues": {
              "get": {
                "operationId": "listQueues",
                "summary": "Queues: counts per state, oldest available age, paused",
                "x-baton-roles": [
                  "admin",
                  "read"
                ],
                "responses": {
                  "200": {
                    "description": "Every queue with jobs or paused.",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/QueueList"
                        }
                      }
                    }
                  },
                  "401": {
                    "$ref": "#/components/responses/Unauthorized"
                  },
                  "403": {
                    "$ref": "#/components/responses/Forbidden"
                  },
                  "503": {
                    "$ref": "#/components/responses/Unavailable"
                  }
                }
              }
            },
            "/v1/queues/{name}/pause": {
              "post": {
                "operationId": "pauseQueue",
                "summary": "Stop workers claiming from a queue",
                "x-baton-roles": [
                  "admin"
                ],
                "responses": {
                  "200": {
                    "description": "Paused.",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/QueuePause"
                        }
                      }
                    }
                  },
                  "400": {
                    "$ref": "#/components/responses/BadRequest"
                  },
                  "401": {
                    "$ref": "#/components/responses/Unauthorized"
                  },
                  "403": {
                    "$ref": "#/components/responses/Forbidden"
                  },
                  "503": {
                    "$ref": "#/components/responses/Unavailable"
                  }
                },
                "parameters": [
                  {
                    "$ref": "#/components/parameters/QueueName"
                  }
                ]
              }
            },
            "/v1/queues/{name}/resume": {
              "post": {
                "operationId": "resumeQueue",
                "summary": "Let workers claim from a queue again",
                "x-baton-roles": [
                  "admin"
                ],
                "responses": {
                  "200": {
                    "description": "Resumed.",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/QueuePause"
                        }
                      }
                    }
                  },
                  "400": {
                    "$ref": "#/components/responses/BadRequest"
                  },
                  "401": {
                    "$ref": "#/components/responses/Unauthorized"
                  },
                  "403": {
                    "$ref": "#/components/responses/Forbidden"
                  },
                  "503": {
                    "$ref": "#/components/responses/Unavailable"
                  }
                },
                "parameters": [
                  {
                    "$ref": "#/components/parameters/QueueName"
                  }
                ]
              }
            },
            "/v1/lanes": {
              "get": {
                "operationId": "listLanes",
                "summary": "Lanes: the job holding each, its state, and how many wait",
                "x-baton-roles": [
                  "admin",
                  "read"
                ],
                "responses": {
                  "200": {
                    "description": "A page of lanes by name.",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/LanePage"
                        }
                      }
                    }
                  },
                  "400": {
                    "$ref": "#/components/responses/BadRequest"
                  },
                  "401": {
                    "$ref": "#/components/responses/Unauthorized"
                  },
                  "403": {
                    "$ref": "#/components/responses/Forbidden"
                  },
                  "503": {
                    "$ref": "#/components/responses/Unavailable"
                  }
                },
                "parameters": [
                  {
                    "$ref": "#/components/parameters/Limit"
                  },
                  {
                    "$ref": "#/components/parameters/Cursor"
                  }
                ]
              }
            },
            "/v1/workers": {
              "get": {
                "operationId": "listWorkers",
                "summary": "Registered workers",
                "x-baton-roles": [
                  "admin",
                  "read"
                ],
                "responses": {
                  "200": {
                    "description": "Workers, oldest first.",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/WorkerList"
                        }
                      }
                    }
                  },
                  "401": {
                    "$ref": "#/components/responses/Unauthorized"
                  },
                  "403": {
                    "$ref": "#/components/responses/Forbidden"
                  },
                  "503": {
                    "$ref": "#/components/responses/Unavailable"
                  }
                }
              }
            },
            "/healthz": {
              "get": {
                "operationId": "health",
                "summary": "The process is up",
                "x-baton-roles": [],
                "responses": {
                  "200": {
                    "description": "Up.",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/Health"
                        }
                      }
                    }
                  }
                },
                "security": []
              }
            },
            "/readyz": {
              "get": {
                "operationId": "ready",
                "summary": "The database answers and its schema is current",
                "x-baton-roles": [],
                "responses": {
                  "200": {
                    "description": "Ready.",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/Ready"
                        }
                      }
                    }
                  },
                  "503": {
                    "description": "Not ready: the detail says why.",
                    "content": {
                      "application/problem+json": {
                        "schema": {
                          "$ref": "#/components/schemas/Problem"
                        }
                      }
                    }
                  }
                },
                "security": []
              }
            },
            "/metrics": {
              "get": {
                "operationId": "metrics",
                "summary": "Prometheus metrics (any token; open when the server runs with --metrics-open)",
                "x-baton-roles": [
                  "admin",
                  "enqueue",
                  "read"
                ],
                "responses": {
                  "200": {
                    "description": "Prometheus text format.",
                    "content": {
                      "text/plain": {
                        "schema": {
                          "type": "string"
                        }
                      }
                    }
                  },
                  "401": {
                    "$ref": "#/components/responses/Unauthorized"
                  }
                },
                "security": [
                  {
                    "bearer": []
                  }
                ]
              }
            },
            "/openapi.json": {
              "get": {
                "operationId": "openAPI",
                "summary": "This document (any token)",
                "x-baton-roles": [
                  "admin",
                  "enqueue",
                  "read"
                ],
                "responses": {
                  "200": {
                    "description": "OpenAPI 3.1.",
                    "content": {
                      "application/json": {
                        "schema": {
                          "type": "object"
                        }
                      }
                    }
                  },
                  "401": {
                    "$ref": "#/components/responses/Unauthorized"
                  }
                }
              }
            }
          },
          "components": {
            "securitySchemes": {
              "bearer": {
                "type": "http",
                "scheme": "bearer"
              }
            },
            "schemas": {
              "Problem": {
                "type": "object",
                "properties": {
                  "type": {
                    "type": "string",
                    "description": "`about:blank` for plain HTTP errors, else `urn:baton:problem:<name>`: invalid-request, unauthorized, forbidden, conflict, idempotency-key-taken, body-too-large, unknown-task, not-ready, internal."
                  },
                  "title": {
                    "type": "string"
                  },
                  "status": {
                    "type": "integer"
                  },
                  "detail": {
                    "type": "string"
                  },
                  "path": {
                    "type": "string",
                    "description": "JSON path of the field at fault in the request body (`stages[1].timeout`), or the query parameter's name."
                  },
                  "tasks": {
                    "type": "array",
                    "items": {
                      "type": "string"
                    },
                    "description": "For unknown-task: the task names no live worker serves."
                  }
                },
                "required": [
                  "type",
                  "title",
                  "status"
                ],
                "additionalProperties": false,
                "description": "RFC 9457 problem details."
              },
              "Duration": {
                "type": "string",
                "pattern": "^[0-9]+(\\.[0-9]+)?(ms|s|m|h|d)?$",
                "description": "`250ms`, `30s`, `10m`, `2h`, `1d`; a bare number is seconds.",
                "example": "30s"
              },
              "JobState": {
                "type": "string",
                "enum": [
                  "scheduled",
                  "available",
                  "running",
                  "retryable",
                  "waiting",
                  "completed",
                  "discarded",
                  "cancelled"
                ]
              },
              "StageState": {
                "type": "string",
                "enum": [
                  "scheduled",
                  "available",
                  "running",
                  "retryable",
                  "waiting",
                  "completed",
                  "discarded",
                  "cancelled",
                  "pending"
                ],
                "description": "A job state for the current stage; `completed` for earlier ones; `pending` for later ones."
              },
              "Backoff": {
                "type": "object",
                "properties": {
                  "kind": {
                    "type": "string",
                    "enum": [
                      "exponential",
                      "constant",
                      "linear"
                    ],
                    "default": "exponential"
                  },
                  "initial": {
                    "$ref": "#/components/schemas/Duration"
                  },
                  "max": {
                    "$ref": "#/components/schemas/Duration"
                  },
                  "jitter": {
                    "type": "number",
                    "minimum": 0,
                    "maximum": 1,
                    "description": "Fraction of the delay added or taken at random."
                  }
                },
                "required": [],
                "additionalProperties": false,
                "description": "Wait between attempts, with initial ≤ max. Default: exponential from 1s doubling to 10m, jitter 0.1."
              },
              "TaskStageRequest": {
                "type": "object",
                "properties": {
                  "task": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 200,
                    "description": "A task some worker serves (else 422, unless `?unchecked=true`). At most 200 UTF-8 bytes, no control characters."
                  },
                  "name": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 200,
                    "description": "Unique within the chain; later stages read this stage's output by it. At most 200 UTF-8 bytes, no control characters."
                  },
                  "args": {
                    "description": "The task's arguments (any JSON; default `{}`)."
                  },
                  "lane": {
                    "type": [
                      "string",
                      "null"
                    ],
                    "minLength": 1,
                    "maxLength": 200,
                    "description": "Run this stage in this lane: one at a time, in order, across all workers. At most 200 UTF-8 bytes, no control characters."
                  },
                  "max_attempts": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 10000,
                    "default": 20
                  },
                  "backoff": {
                    "$ref": "#/components/schemas/Backoff"
                  },
                  "timeout": {
                    "$ref": "#/components/schemas/Duration",
                    "description": "Longer than zero; default 5m."
                  }
                },
                "required": [
                  "task"
                ],
                "additionalProperties": false
              },
              "GroupStageRequest": {
                "type": "object",
                "properties": {
                  "name": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 200
                  },
                  "group": {
                    "type": "array",
                    "items": {
                      "$ref": "#/components/schemas/StageRequest"
                    },
                    "minItems": 1,
                    "maxItems": 100,
                    "description": "Members run concurrently, each fed this stage's input; the stage's output is the array of their outputs."
                  }
                },
                "required": [
                  "group"
                ],
                "additionalProperties": false
              },
              "StageRequest": {
                "oneOf": [
                  {
                    "$ref": "#/components/schemas/TaskStageRequest"
                  },
                  {
                    "$ref": "#/components/schemas/GroupStageRequest"
                  }
                ]
              },
              "JobRequest": {
                "type": "object",
                "properties": {
                  "queue": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 200,
                    "default": "default",
                    "description": "At most 200 UTF-8 bytes, no control characters."
                  },
                  "priority": {
                    "type": "integer",
                    "minimum": -32768,
                    "maximum": 32767,
                    "default": 0,
                    "description": "Lower runs first."
                  },
                  "run_at": {
                    "type": "string",
                    "format": "date-time",
                    "description": "Not before this time (RFC 3339, years 1 to 9999). Not with delay."
                  },
                  "delay": {
                    "$ref": "#/components/schemas/Duration",
                    "description": "Not before this long from now (at most 100 years). Not with run_at."
                  },
                  "idempotency_key": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 255,
                    "description": "A repeated key answers 200 with the existing job. The Idempotency-Key header works the same."
                  },
                  "metadata": {
                    "type": "object",
                    "description": "Yours; stored and shown, passed to tasks."
                  },
                  "input": {
                    "description": "The first stage's input (any JSON)."
                  },
                  "stages": {
                    "type": "array",
                    "items": {
                      "$ref": "#/components/schemas/StageRequest"
                    },
                    "minItems": 1,
                    "maxItems": 100,
                    "description": "Stage names are unique within the chain. No string or key anywhere in a job (input, metadata, args) may hold a NUL character (\\u0000), which PostgreSQL cannot store."
                  }
                },
                "required": [
                  "stages"
                ],
                "additionalProperties": false,
                "not": {
                  "required": [
                    "run_at",
                    "delay"
                  ]
                }
              },
              "BatchRequest": {
                "type": "object",
                "properties": {
                  "jobs": {
                    "type": "array",
                    "items": {
                      "$ref": "#/components/schemas/JobRequest"
                    },
                    "minItems": 1,
                    "maxItems": 10000
                  }
                },
                "required": [
                  "jobs"
                ],
                "additionalProperties": false
              },
              "AttemptError": {
                "type": "object",
                "properties": {
                  "attempt": {
                    "type": "integer"
                  },
                  "at": {
                    "type": "string",
                    "format": "date-time"
                  },
                  "worker": {
                    "type": [
                      "string",
                      "null"
                    ]
                  },
                  "error": {
                    "type": "string"
                  }
                },
                "required": [
                  "at",
                  "attempt",
                  "error",
                  "worker"
                ],
                "additionalProperties": false
              },
              "Member": {
                "type": "object",
                "properties": {
                  "index": {
                    "type": "integer"
                  },
                  "id": {
                    "type": "integer",
                    "format": "int64"
                  },
                  "state": {
                    "$ref": "#/components/schemas/JobState"
                  },
                  "attempts": {
                    "type": "integer"
                  },
                  "output": {
                    "description": "Its output once completed, else null."
                  },
                  "errors": {
                    "type": "array",
                    "items": {
                      "$ref": "#/components/schemas/AttemptError"
                    }
                  }
                },
                "required": [
                  "attempts",
                  "errors",
                  "id",
                  "index",
                  "output",
                  "state"
                ],
                "additionalProperties": false
              },
              "Stage": {
                "type": "object",
                "properties": {
                  "index": {
                    "type": "integer"
                  },
                  "name": {
                    "type": [
                      "string",
                      "null"
                    ]
                  },
                  "task": {
                    "type": [
                      "string",
                      "null"
                    ],
                    "description": "Null for a group stage."
                  },
                  "lane": {
                    "type": [
                      "string",
                      "null"
                    ]
                  },
                  "state": {
                    "$ref": "#/components/schemas/StageState"
                  },
                  "attempts": {
                    "type": "integer"
                  },
                  "max_attempts": {
                    "type": [
                      "integer",
                      "null"
                    ]
                  },
                  "started_at": {
                    "type": [
                      "string",
                      "null"
                    ],
                    "format": "date-time"
                  },
                  "finished_at": {
                    "type": [
                      "string",
                      "null"
                    ],
                    "format": "date-time"
                  },
                  "output": {
                    "description": "The stage's output once it completed, else null."
                  },
                  "errors": {
                    "type": "array",
                    "items": {
                      "$ref": "#/components/schemas/AttemptError"
                    }
                  },
                  "members": {
                    "type": "array",
                    "items": {
                      "$ref": "#/components/schemas/Member"
                    },
                    "description": "Group stages only."
                  }
                },
                "required": [
                  "index",
                  "name",
                  "task",
                  "lane",
                  "state",
                  "attempts",
                  "max_attempts",
                  "started_at",
                  "finished_at",
                  "output",
                  "errors"
                ],
                "additionalProperties": false
              },
              "Job": {
                "type": "object",
                "properties": {
                  "id": {
                    "type": "integer",
                    "format": "int64"
                  },
                  "queue": {
                    "type": "string"
                  },
                  "priority": {
                    "type": "integer"
                  },
                  "state": {
                    "$ref": "#/components/schemas/JobState"
                  },
                  "run_at": {
                    "type": "string",
                    "format": "date-time"
                  },
                  "created_at": {
                    "type": "string",
                    "format": "date-time"
                  },
                  "finished_at": {
                    "type": [
                      "string",
                      "null"
                    ],
                    "format": "date-time"
                  },
                  "metadata": {
                    "type": "object"
                  },
                  "input": {},
                  "output": {
                    "description": "The last stage's output once the job completed, else null."
                  },
                  "current_stage": {
                    "type": "integer"
                  },
                  "stages": {
                    "type": "array",
                    "items": {
                      "$ref": "#/components/schemas/Stage"
                    }
                  },
                  "idempotency_key": {
                    "type": [
                      "string",
                      "null"
                    ]
                  },
                  "parent_id": {
                    "type": [
                      "integer",
                      "null"
                    ],
                    "format": "int64",
                    "description": "For a group member: its parent job."
                  }
                },
                "required": [
                  "created_at",
                  "current_stage",
                  "finished_at",
                  "id",
                  "idempotency_key",
                  "input",
                  "metadata",
                  "output",
                  "parent_id",
                  "priority",
                  "queue",
                  "run_at",
                  "stages",
                  "state"
                ],
                "additionalProperties": false
              },
              "JobSummary": {
                "type": "object",
                "properties": {
                  "id": {
                    "type": "integer",
                    "format": "int64"
                  },
                  "queue": {
                    "type": "string"
                  },
                  "priority": {
                    "type": "integer"
                  },
                  "state": {
                    "$ref": "#/components/schemas/JobState"
                  },
                  "current_stage": {
                    "type": "integer"
                  },
                  "stage_count": {
                    "type": "integer"
                  },
                  "task": {
                    "type": [
                      "string",
                      "null"
                    ]
                  },
                  "lane": {
                    "type": [
                      "string",
                      "null"
                    ]
                  },
                  "attempts": {
                    "type": "integer"
                  },
                  "run_at": {
                    "type": "string",
                    "format": "date-time"
                  },
                  "created_at": {
                    "type": "string",
                    "format": "date-time"
                  },
                  "finished_at": {
                    "type": [
                      "string",
                      "null"
                    ],
                    "format": "date-time"
                  },
                  "last_error": {
                    "type": [
                      "string",
                      "null"
                    ]
                  }
                },
                "required": [
                  "attempts",
                  "created_at",
                  "current_stage",
                  "finished_at",
                  "id",
                  "lane",
                  "last_error",
                  "priority",
                  "queue",
                  "run_at",
                  "stage_count",
                  "state",
                  "task"
                ],
                "additionalProperties": false
              },
              "JobPage": {
                "type": "object",
                "properties": {
                  "jobs": {
                    "type": "array",
                    "items": {
                      "$ref": "#/components/schemas/JobSummary"
                    }
                  },
                  "next_cursor": {
                    "type": [
                      "string",
                      "null"
                    ],
                    "description": "Pass as `cursor` for the next (older) page; null on the last page."
                  }
                },
                "required": [
                  "jobs",
                  "next_cursor"
                ],
                "additionalProperties": false
              },
              "EnqueuedJob": {
                "type": "object",
                "properties": {
                  "id": {
                    "type": "integer",
                    "format": "int64"
                  },
                  "queue": {
                    "type": "string"
                  },
                  "state": {
                    "$ref": "#/components/schemas/JobState"
                  },
                  "inserted": {
                    "type": "boolean",
                    "description": "False when an idempotency key named an existing job."
                  }
                },
                "required": [
                  "id",
                  "inserted",
                  "queue",
                  "state"
                ],
                "additionalProperties": false
              },
              "BatchResponse": {
                "type": "object",
                "properties": {
                  "jobs": {
                    "type": "array",
                    "items": {
                      "$ref": "#/components/schemas/EnqueuedJob"
                    }
                  }
                },
                "required": [
                  "jobs"
                ],
                "additionalProperties": false
              },
              "Queue": {
                "type": "object",
                "properties": {
                  "name": {
                    "type": "string"
                  },
                  "paused": {
                    "type": "boolean"
                  },
                  "counts": {
                    "type": "object",
                    "properties": {
                      "scheduled": {
                        "type": "integer"
                      },
                      "available": {
                        "type": "integer"
                      },
                      "running": {
                        "type": "integer"
                      },
                      "retryable": {
                        "type": "integer"
                      },
                      "waiting": {
                        "type": "integer"
                      },
                      "completed": {
                        "type": "integer"
                      },
                      "discarded": {
                        "type": "integer"
                      },
                      "cancelled": {
                        "type": "integer"
                      }
                    },
                    "required": [
                      "available",
                      "cancelled",
                      "completed",
                      "discarded",
                      "retryable",
                      "running",
                      "scheduled",
                      "waiting"
                    ],
                    "additionalProperties": false
                  },
                  "oldest_available_at": {
                    "type": [
                      "string",
                      "null"
                    ],
                    "format": "date-time"
                  },
                  "oldest_available_age_seconds": {
                    "type": [
                      "number",
                      "null"
                    ],
                    "description": "How long the oldest available job has been due."
                  }
                },
                "required": [
                  "counts",
                  "name",
                  "oldest_available_age_seconds",
                  "oldest_available_at",
                  "paused"
                ],
                "additionalProperties": false
              },
              "QueueList": {
                "type": "object",
                "properties": {
                  "queues": {
                    "type": "array",
                    "items": {
                      "$ref": "#/components/schemas/Queue"
                    }
                  }
                },
                "required": [
                  "queues"
                ],
                "additionalProperties": false
              },
              "QueuePause": {
                "type": "object",
                "properties": {
                  "name": {
                    "type": "string"
                  },
                  "paused": {
                    "type": "boolean"
                  }
                },
                "required": [
                  "name",
                  "paused"
                ],
                "additionalProperties": false
              },
              "LaneHead": {
                "type": "object",
                "properties": {
                  "id": {
                    "type": "integer",
                    "format": "int64"
                  },
                  "queue": {
                    "type": "string"
                  },
                  "state": {
                    "$ref": "#/components/schemas/JobState"
                  },
                  "stage": {
                    "type": "integer"
                  },
                  "task": {
                    "type": [
                      "string",
                      "null"
                    ]
                  },
                  "attempts": {
                    "type": "integer"
                  },
                  "run_at": {
                    "type": "string",
                    "format": "date-time"
                  },
                  "last_error": {
                    "type": [
                      "string",
                      "null"
                    ]
                  }
                },
                "required": [
                  "attempts",
                  "id",
                  "last_error",
                  "queue",
                  "run_at",
                  "stage",
                  "state",
                  "task"
                ],
                "additionalProperties": false
              },
              "Lane": {
                "type": "object",
                "properties": {
                  "lane": {
                    "type": "string"
                  },
                  "head": {
                    "anyOf": [
                      {
                        "$ref": "#/components/schemas/LaneHead"
                      },
                      {
                        "type": "null"
                      }
                    ]
                  },
                  "head_state": {
                    "anyOf": [
                      {
                        "$ref": "#/components/schemas/JobState"
                      },
                      {
                        "type": "null"
                      }
                    ]
                  },
                  "waiting": {
                    "type": "integer",
                    "description": "Jobs waiting behind the head."
                  }
                },
                "required": [
                  "head",
                  "head_state",
                  "lane",
                  "waiting"
                ],
                "additionalProperties": false
              },
              "LanePage": {
                "type": "object",
                "properties": {
                  "lanes": {
                    "type": "array",
                    "items": {
                      "$ref": "#/components/schemas/Lane"
                    }
                  },
                  "next_cursor": {
                    "type": [
                      "string",
                      "null"
                    ]
                  }
                },
                "required": [
                  "lanes",
                  "next_cursor"
                ],
                "additionalProperties": false
              },
              "Worker": {
                "type": "object",
                "properties": {
                  "id": {
                    "type": "string"
                  },
                  "host": {
                    "type": "string"
                  },
                  "pid": {
                    "type": "integer"
                  },
                  "queues": {
                    "type": "array",
                    "items": {
                      "type": "string"
                    }
                  },
                  "tasks": {
                    "type": "array",
                    "items": {
                      "type": "string"
                    }
                  },
                  "started_at": {
                    "type": "string",
                    "format": "date-time"
                  },
                  "last_heartbeat_at": {
                    "type": "string",
                    "format": "date-time"
                  },
                  "running_jobs": {
                    "type": "array",
                    "items": {
                      "type": "integer",
                      "format": "int64"
                    }
                  }
                },
                "required": [
                  "host",
                  "id",
                  "last_heartbeat_at",
                  "pid",
                  "queues",
                  "running_jobs",
                  "started_at",
                  "tasks"
                ],
                "additionalProperties": false
              },
              "WorkerList": {
                "type": "object",
                "properties": {
                  "workers": {
                    "type": "array",
                    "items": {
                      "$ref": "#/components/schemas/Worker"
                    }
                  }
                },
                "required": [
                  "workers"
                ],
                "additionalProperties": false
              },
              "Health": {
                "type": "object",
                "properties": {
                  "status": {
                    "type": "string",
                    "const": "ok"
                  }
                },
                "required": [
                  "status"
                ],
                "additionalProperties": false
              },
              "Ready": {
                "type": "object",
                "properties": {
                  "status": {
                    "type": "string",
                    "const": "ready"
                  },
                  "schema_version": {
                    "type": "integer"
                  }
                },
                "required": [
                  "schema_version",
                  "status"
                ],
                "additionalProperties": false
              }
            },
            "responses": {
              "BadRequest": {
                "description": "The request is not valid: `path` names the field.",
                "content": {
                  "application/problem+json": {
                    "schema": {
                      "$ref": "#/components/schemas/Problem"
                    }
                  }
                }
              },
              "Unauthorized": {
                "description": "No valid bearer token.",
                "content": {
                  "application/problem+json": {
                    "schema": {
                      "$ref": "#/components/schemas/Problem"
                    }
                  }
                }
              },
              "Forbidden": {
                "description": "The token's role does not allow this.",
                "content": {
                  "application/problem+json": {
                    "schema": {
                      "$ref": "#/components/schemas/Problem"
                    }
                  }
                }
              },
              "NotFound": {
                "description": "No such job (or not one this `enqueue` token enqueued).",
                "content": {
                  "application/problem+json": {
                    "schema": {
                      "$ref": "#/components/schemas/Problem"
                    }
                  }
                }
              },
              "Conflict": {
                "description": "The job's state does not allow this.",
                "content": {
                  "application/problem+json": {
                    "schema": {
                      "$ref": "#/components/schemas/Problem"
                    }
                  }
                }
              },
              "TooLarge": {
                "description": "The body is over the limit (1 MiB by default).",
                "content": {
                  "application/problem+json": {
                    "schema": {
                      "$ref": "#/components/schemas/Problem"
                    }
                  }
                }
              },
              "UnknownTask": {
                "description": "A task no worker seen in the last few minutes serves; `tasks` lists them.",
                "content": {
                  "application/problem+json": {
                    "schema": {
                      "$ref": "#/components/schemas/Problem"
                    }
                  }
                }
              },
              "Unavailable": {
                "description": "The database cannot be reached right now (restarting, connections failing): nothing was done, or, for an enqueue with an idempotency key, sending it again is safe. Retry after the `Retry-After` seconds.",
                "headers": {
                  "Retry-After": {
                    "description": "Seconds to wait before retrying.",
                    "schema": {
                      "type": "integer"
                    }
                  }
                },
                "content": {
                  "application/problem+json": {
                    "schema": {
                      "$ref": "#/components/schemas/Problem"
                    }
                  }
                }
              }
            },
            "parameters": {
              "JobID": {
                "name": "id",
                "in": "path",
                "required": true,
                "schema": {
                  "type": "integer",
                  "format": "int64"
                }
              },
              "QueueName": {
                "name": "name",
                "in": "path",
                "required": true,
                "schema": {
                  "type": "string",
                  "minLength": 1,
                  "maxLength": 200
                }
              },
              "Wait": {
                "name": "wait",
                "in": "query",
                "required": false,
                "description": "Hold the request until the job has finished or this time is up (waits longer than 5m are cut to 5m); woken by NOTIFY.",
                "schema": {
                  "$ref": "#/components/schemas/Duration"
                }
              },
              "Unchecked": {
                "name": "unchecked",
                "in": "query",
                "required": false,
                "description": "Skip the check that some live worker serves each task.",
                "schema": {
                  "type": "boolean"
                }
              },
              "Limit": {
                "name": "limit",
                "in": "query",
                "required": false,
                "schema": {
                  "type": "integer",
                  "minimum": 1,
                  "maximum": 1000
                }
              },
              "Cursor": {
                "name": "cursor",
                "in": "query",
                "required": false,
                "description": "`next_cursor` of the previous page.",
                "schema": {
                  "type": "string"
                }
              },
              "IdempotencyKey": {
                "name": "Idempotency-Key",
                "in": "header",
                "required": false,
                "description": "Same as `idempotency_key`; both given must agree.",
                "schema": {
                  "type": "string",
                  "minLength": 1,
                  "maxLength": 255
                }
              }
            }
          }
        }
        """#
}
