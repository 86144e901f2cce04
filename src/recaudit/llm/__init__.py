"""recaudit.llm"""
