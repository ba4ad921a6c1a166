"""What a run answers and why: answer routes, drafts, the offline model, knowledge, explain."""
