package rest

import "github.com/labstack/echo/v4"

// connectorRoutes registers every public endpoint of Kafka Connect's REST
// API except /admin (see adminRoutes). GET routes answer HEAD too, as
// Jersey's do.
func (s *Server) connectorRoutes(e *echo.Echo) {
	get := func(path string, h echo.HandlerFunc) {
		e.GET(path, h)
		e.HEAD(path, h)
	}
	get("/", s.serverInfo)
	get("/health", s.health)

	get("/connectors", s.listConnectors)
	e.POST("/connectors", s.createConnector)
	get("/connectors/:connector", s.getConnector)
	e.DELETE("/connectors/:connector", s.deleteConnector)
	get("/connectors/:connector/config", s.getConfig)
	e.PUT("/connectors/:connector/config", s.putConfig)
	e.PATCH("/connectors/:connector/config", s.patchConfig)
	get("/connectors/:connector/status", s.connectorStatus)
	get("/connectors/:connector/tasks", s.taskConfigs)
	get("/connectors/:connector/tasks/:task/status", s.taskStatus)
	e.POST("/connectors/:connector/tasks/:task/restart", s.restartTask)
	e.POST("/connectors/:connector/restart", s.restartConnector)
	e.PUT("/connectors/:connector/pause", s.pauseConnector)
	e.PUT("/connectors/:connector/resume", s.resumeConnector)
	e.PUT("/connectors/:connector/stop", s.stopConnector)
	get("/connectors/:connector/topics", s.activeTopics)
	e.PUT("/connectors/:connector/topics/reset", s.resetActiveTopics)
	get("/connectors/:connector/offsets", s.getOffsets)
	e.PATCH("/connectors/:connector/offsets", s.alterOffsets)
	e.DELETE("/connectors/:connector/offsets", s.resetOffsets)
	// GET /connectors/{c}/tasks-config was deprecated in Kafka 3.7 (KIP-970)
	// and removed in 4.0; Sluice still serves it for tools written against
	// 3.x.
	get("/connectors/:connector/tasks-config", s.tasksConfig)

	// The internal endpoints belong to distributed mode: POST
	// /connectors/{c}/tasks takes a follower's task configs when the herder
	// is a TaskConfigWriter (which checks their KIP-507 signature), and
	// answers 404 like an unknown route otherwise (not 405, which the GET on
	// the same path would otherwise cause). PUT /connectors/{c}/fence
	// (zombie fencing, KIP-618) is not served.
	e.POST("/connectors/:connector/tasks", s.putTaskConfigs)
	e.PUT("/connectors/:connector/fence", routeNotServed)

	get("/connector-plugins", s.listPlugins)
	get("/connector-plugins/:plugin/config", s.pluginConfig)
	e.PUT("/connector-plugins/:plugin/config/validate", s.validateConfig)
}

// adminRoutes registers /admin/loggers (KIP-495).
func (s *Server) adminRoutes(e *echo.Echo) {
	e.GET("/admin/loggers", s.listLoggers)
	e.HEAD("/admin/loggers", s.listLoggers)
	e.GET("/admin/loggers/:logger", s.getLogger)
	e.HEAD("/admin/loggers/:logger", s.getLogger)
	e.PUT("/admin/loggers/:logger", s.setLogger)
}

func routeNotServed(echo.Context) error { return errRouteNotFound }
