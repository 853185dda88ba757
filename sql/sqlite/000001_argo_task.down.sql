DROP TABLE IF EXISTS argo_leader;
DROP TABLE IF EXISTS argo_instance;
DROP TABLE IF EXISTS argo_task_attempt;
DROP TABLE IF EXISTS argo_task;
