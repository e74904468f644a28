"""Airflow plugins of the provider: the Tables view (`tables_plugin.TxnLogTablesPlugin`)."""
