from takeover.cli import main

main()
