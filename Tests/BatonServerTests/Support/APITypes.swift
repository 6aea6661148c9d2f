import BatonAPI

// The control plane's types, as the tests read answers with them.
typealias JobView = Components.Schemas.Job
typealias JobPage = Components.Schemas.JobPage
typealias LanePage = Components.Schemas.LanePage
typealias QueueList = Components.Schemas.QueueList
typealias QueuePauseState = Components.Schemas.QueuePause
typealias WorkerList = Components.Schemas.WorkerList
