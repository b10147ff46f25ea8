from tht.cli import main

main()
