DROP TABLE IF EXISTS argo_task_dep;
